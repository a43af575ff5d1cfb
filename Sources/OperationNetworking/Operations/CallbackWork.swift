import Dispatch
import Foundation

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
