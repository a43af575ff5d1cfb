import Dispatch
import Foundation

/// The queues the library runs its own and its users' work on (never the network thread).
///
/// - Threading: immutable after init.
enum CallbackQueues {
    /// Marks the default callback queue, so a wait from inside it can be detected.
    static let callbackQueueKey = DispatchSpecificKey<Bool>()

    /// The default `completionQueue`: one serial queue for the process, so callbacks never overlap
    /// (the guarantee AFNetworking's main-queue default gave, without needing a main loop).
    static let callback: DispatchQueue = {
        let queue = DispatchQueue(label: "org.operationnetworking.callback")
        queue.setSpecific(key: callbackQueueKey, value: true)
        return queue
    }()

    /// Where the network thread's batches of transfer starts and ends are delivered: serial, so the
    /// start and end of one operation are seen in the order they happened. Nothing whose time a body or
    /// a caller decides runs here, as every transfer's end waits behind it: only the raw-data
    /// serializer's check on a body up to 64 KiB is done in this hop (`HTTPRequestOperation.preparationQueue`).
    static let delivery = DispatchQueue(label: "org.operationnetworking.delivery")

    /// Where responses are serialized (decoders and callers' serializers): concurrent, off the network
    /// thread, the delivery queue and the completion queue, so a slow or hostile body holds only its
    /// own operation.
    static let processing = DispatchQueue(label: "org.operationnetworking.processing", attributes: .concurrent)

    /// The default `completionGroup`.
    static let group = DispatchGroup()

    /// Whether the caller is running on the default callback queue.
    static var isOnCallbackQueue: Bool {
        DispatchQueue.getSpecific(key: callbackQueueKey) == true
    }
}

extension URLConnectionOperation {
    /// Where the library calls back when nobody chose a queue: the process's one serial callback
    /// queue (label `org.operationnetworking.callback`). Completion, success, failure, progress and
    /// batch blocks of an operation whose `completionQueue` is `nil` (the default) run here, as do a
    /// manager's request-building failures, `NetworkReachabilityManager`'s status block without a
    /// `callbackQueue`, and the multipart file-writing completion. AFNetworking's default was the
    /// main queue, which a Linux program rarely drains. Ported code that hops "back to where the
    /// handlers run" names this queue instead of guessing (`DispatchQueue.global()` is concurrent, so
    /// work sent there can overlap the handlers). Redirect and challenge blocks are not called here
    /// (they run on the network thread). Constant; read it from any thread.
    public static var defaultCompletionQueue: DispatchQueue { CallbackQueues.callback }
}

/// The library's work for its callback queue, kept in one first-in first-out list so that a handler
/// that waits on that queue for an operation (`waitUntilFinished()`, `OperationQueue`'s
/// `addOperations(_:waitUntilFinished: true)`) can run it while it waits.
///
/// The callback queue is serial for the whole process, so callbacks never overlap. A handler that
/// blocks it to wait for another operation would wait forever: that operation's handlers, and those
/// of the operations it depends on, are queued behind the waiter. Each item is therefore queued twice:
/// in the list, and as one "run the oldest item" block on the queue. A waiter on the queue runs the
/// oldest items itself until what it waits for happened; a block that finds the list empty (a waiter
/// ran its item) does nothing. Either way an item runs once, on the callback queue's thread, and
/// never beside another callback (the waiter is blocked in its own handler meanwhile), in the order
/// the items were queued.
/// - Threading: any thread queues; items run on the callback queue. The list, the change counter and
///   the waiter count belong to `condition`'s lock, held only to read or change them.
final class CallbackWork: @unchecked Sendable {
    /// The process's one list, for `CallbackQueues.callback`.
    static let shared = CallbackWork()

    private struct Item {
        let work: @Sendable () -> Void
        let group: DispatchGroup?
    }

    private let condition = NSCondition()
    /// Queued items; those before `head` ran and are `nil` (released at once: an item holds its
    /// operation), removed in bulk so that taking the oldest stays cheap.
    private var items: [Item?] = []
    private var head = 0
    /// Bumped by every new item and every `changed()`, so a waiter never misses a wake-up.
    private var changes: UInt64 = 0
    /// Waiters blocked on `condition`; nobody is woken when there are none.
    private var waiters = 0

    /// Queues `work` for the callback queue, inside `group` (entered now, left once it ran).
    func async(group: DispatchGroup?, _ work: @escaping @Sendable () -> Void) {
        group?.enter()
        condition.lock()
        items.append(Item(work: work, group: group))
        changes &+= 1
        if waiters > 0 { condition.broadcast() }
        condition.unlock()
        CallbackQueues.callback.async { [self] in runOldest() }
    }

    /// Tells waiters to look again at what they wait for (an operation finished).
    func changed() {
        condition.lock()
        changes &+= 1
        if waiters > 0 { condition.broadcast() }
        condition.unlock()
    }

    /// On the callback queue: runs queued items, oldest first, until `done()` holds (read outside the
    /// lock: it takes the operation's). Waits for new items or a `changed()` when there are none.
    func run(until done: () -> Bool) {
        while true {
            condition.lock()
            let seen = changes
            condition.unlock()
            if done() { return }
            if runOldest() { continue }
            condition.lock()
            waiters += 1
            while changes == seen { condition.wait() }
            waiters -= 1
            condition.unlock()
        }
    }

    /// Runs the oldest queued item, if any; whether there was one.
    @discardableResult
    private func runOldest() -> Bool {
        guard let item = takeOldest() else { return false }
        item.work()
        item.group?.leave()
        return true
    }

    private func takeOldest() -> Item? {
        condition.lock()
        defer { condition.unlock() }
        guard head < items.count else { return nil }
        let item = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: items.count <= 256)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }
}

extension CallbackQueues {
    /// Runs `work` on `queue` inside `group`; on the library's callback queue through `CallbackWork`,
    /// so that a handler waiting there can run it.
    static func async(on queue: DispatchQueue, group: DispatchGroup? = nil, _ work: @escaping @Sendable () -> Void) {
        if queue === callback {
            CallbackWork.shared.async(group: group, work)
        } else if let group {
            queue.async(group: group, execute: work)
        } else {
            queue.async(execute: work)
        }
    }
}

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
