import Dispatch

/// The end of one pause, signalled once (by the transfer's end) and awaited by any number of archivers,
/// each outside every lock. The semaphore holds the fact itself: a signal before a wait is not lost, and
/// each waiter that receives it passes it on to the next.
/// - Threading: any thread; its one state is the semaphore's.
final class PauseSettlement: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    /// The pause settled (continued, kept its bytes, was cancelled or overtaken by the transfer's end).
    func settle() {
        semaphore.signal()
    }

    /// Waits until the pause settled or `deadline` passed; false when it passed first.
    func wait(until deadline: DispatchTime) -> Bool {
        guard semaphore.wait(timeout: deadline) == .success else { return false }
        semaphore.signal()   // for the next waiter
        return true
    }
}
