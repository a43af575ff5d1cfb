import Foundation

/// A value owned by a lock: the only way to the value is `withLock`, so the compiler keeps the rule
/// that it is never read or written without the lock. An `NSLock`, not `Synchronization.Mutex`, which
/// ThreadSanitizer misreads on Linux.
///
/// Never call a user block, an open method or another `Protected`'s `withLock` inside `body`.
/// - Threading: any thread; `withLock` holds its `NSLock`, so one thread at a time reaches the value.
///   `Sendable` when `State` is.
final class Protected<State> {
    private let lock = NSLock()
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the value, the lock held.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }

    /// A copy of the value.
    var value: State { withLock { $0 } }
}

extension Protected: @unchecked Sendable where State: Sendable {}
