import Foundation

/// A value owned by a lock: the only way to the value is `withLock`, so the compiler keeps the rule
/// that it is never read or written without the lock. A `pthread_mutex_t`, not `Synchronization.Mutex`,
/// which ThreadSanitizer misreads on Linux.
///
/// The value and the mutex live in one object (`Storage`, a `ManagedBuffer`): one allocation, and no
/// run-time exclusivity check on each acquisition, which the lock makes redundant (a stored `var` of
/// a class is checked on every access; memory the buffer owns is not). `NSLock` would add an object and
/// three allocations of its own per instance, and a dynamic call per acquisition.
///
/// Never call a user block, an open method or another `Protected`'s `withLock` inside `body`.
/// - Threading: any thread; `withLock` holds the mutex, so one thread at a time reaches the value.
///   `Sendable` when `State` is.
final class Protected<State> {
    private let storage: Storage

    init(_ state: State) {
        storage = Storage.make(state)
    }

    /// Runs `body` with the value, the lock held.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try storage.withUnsafeMutablePointers { state, mutex in
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state.pointee)
        }
    }

    /// A copy of the value.
    var value: State { withLock { $0 } }

    /// The value (the buffer's header) and its mutex (the buffer's one element).
    private final class Storage: ManagedBuffer<State, pthread_mutex_t> {
        static func make(_ state: State) -> Storage {
            let buffer = Storage.create(minimumCapacity: 1) { _ in state }
            buffer.withUnsafeMutablePointerToElements { mutex in
                mutex.initialize(to: pthread_mutex_t())
                pthread_mutex_init(mutex, nil)
            }
            // `create` makes an instance of the class it is called on.
            return unsafeDowncast(buffer, to: Storage.self)
        }

        deinit {
            withUnsafeMutablePointerToElements { mutex in
                pthread_mutex_destroy(mutex)
                mutex.deinitialize(count: 1)
            }
        }
    }
}

extension Protected: @unchecked Sendable where State: Sendable {}
