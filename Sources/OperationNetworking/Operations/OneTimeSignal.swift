import Dispatch

/// Something that happens once (a pause settles, a span is made), signalled by one thread and awaited
/// by any number of others, each outside every lock. The semaphore holds the fact itself: a signal
/// before a wait is not lost, and each waiter that receives it passes it on to the next.
/// - Threading: any thread; its one state is the semaphore's.
final class OneTimeSignal: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    /// It happened (the pause continued, kept its bytes, was cancelled or overtaken; the span is made).
    func settle() {
        semaphore.signal()
    }

    /// Waits until it happened or `deadline` passed; false when it passed first.
    func wait(until deadline: DispatchTime) -> Bool {
        guard semaphore.wait(timeout: deadline) == .success else { return false }
        semaphore.signal()   // for the next waiter
        return true
    }
}
