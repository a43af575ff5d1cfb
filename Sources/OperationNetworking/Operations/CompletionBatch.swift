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
        var work: [@Sendable () -> Void]
    }

    private var runs: [Run] = []

    /// Adds `work` to run on `queue` inside `group`.
    func add(on queue: DispatchQueue, group: DispatchGroup, _ work: @escaping @Sendable () -> Void) {
        let serial = CompletionBatch.isKnownSerial(queue)
        if serial, let last = runs.indices.last, runs[last].queue === queue, runs[last].group === group {
            runs[last].work.append(work)
        } else {
            runs.append(Run(queue: queue, group: group, work: [work]))
        }
    }

    /// Dispatches everything gathered; the batch is empty afterwards.
    func send() {
        for run in runs {
            let work = run.work
            CallbackQueues.async(on: run.queue, group: run.group) { for item in work { item() } }
        }
        runs.removeAll()
    }

    private static func isKnownSerial(_ queue: DispatchQueue) -> Bool {
        queue === CallbackQueues.callback || queue === DispatchQueue.main
    }
}
