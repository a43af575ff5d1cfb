import Dispatch

/// Completion-queue work produced while one batch of transfer events is delivered, sent with one
/// `async` per run of consecutive items for the same serial queue and group instead of one per item.
///
/// Only the queues the library knows to be serial (its callback queue and the main queue) are
/// merged: work for a caller's own queue, which may be concurrent, goes out item by item, so items
/// that could run side by side still do. Order per queue is kept either way.
/// - Threading: used by one thread at a time (the delivery queue), never shared.
final class CompletionBatch {
    private struct Run {
        let queue: DispatchQueue
        let group: DispatchGroup
        var work: [Item]
    }

    /// One piece of work. A closure stored straight into an array is kept in the array's generic form
    /// and needs a reabstraction thunk, allocated per closure (one per transfer event); inside a
    /// non-generic struct it stays as it is.
    private struct Item {
        let run: @Sendable () -> Void
    }

    /// Used by one thread at a time (above), so its accesses need no runtime exclusivity checks.
    @exclusivity(unchecked) private var runs: [Run] = []
    /// Room the first run starts with, if its queue is serial: the number of events being delivered, so
    /// that the one run a delivery usually makes (every item for the callback queue) never grows.
    /// Growing it from 16 cost about 650 instructions a request at C=32 (every closure copied at each
    /// doubling).
    private let expectedItems: Int

    /// A batch for the delivery of `expectedItems` events (each adds at most one item).
    init(expectedItems: Int) {
        self.expectedItems = max(1, expectedItems)
    }

    /// Adds `work` to run on `queue` inside `group`.
    func add(on queue: DispatchQueue, group: DispatchGroup, _ work: @escaping @Sendable () -> Void) {
        let serial = CompletionBatch.isKnownSerial(queue)
        if serial, let last = runs.indices.last, runs[last].queue === queue, runs[last].group === group {
            runs[last].work.append(Item(run: work))
        } else {
            var items: [Item] = []
            // The first run gets room for the whole delivery; a later one (queues alternating) the old
            // guess, so that alternation cannot reserve the delivery's size over and over.
            if serial { items.reserveCapacity(runs.isEmpty ? expectedItems : 16) }
            items.append(Item(run: work))
            if runs.capacity == 0 { runs.reserveCapacity(4) }
            runs.append(Run(queue: queue, group: group, work: items))
        }
    }

    /// Dispatches everything gathered; the batch is empty afterwards.
    func send() {
        for run in runs {
            if run.work.count == 1, let item = run.work.first {
                run.queue.async(group: run.group, execute: item.run)
            } else {
                let work = run.work
                run.queue.async(group: run.group) { for item in work { item.run() } }
            }
        }
        runs.removeAll()
    }

    private static func isKnownSerial(_ queue: DispatchQueue) -> Bool {
        queue === CallbackQueues.callback || queue === DispatchQueue.main
    }
}
