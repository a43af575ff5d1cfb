import Foundation
import XCTest

/// Thrown by `withTimeout` when the body did not finish in time.
struct TimedOut: Error {}

/// Runs `body`, failing with `TimedOut` after `seconds`: an await that never returns fails the test
/// instead of hanging the suite. The body runs in a task of its own, cancelled on a timeout and left
/// behind if it ignores the cancellation (a task group would wait for it forever).
func withTimeout<T: Sendable>(_ seconds: TimeInterval = 10,
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let once = OnceResult<T>()
    return try await withCheckedThrowingContinuation { continuation in
        once.continuation = continuation
        let task = Task {
            do { once.resume(.success(try await body())) } catch { once.resume(.failure(error)) }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            once.resume(.failure(TimedOut()))
            task.cancel()
        }
    }
}

/// Resumes a continuation with the first result it is given; guarded by `lock`.
private final class OnceResult<T: Sendable>: @unchecked Sendable {   // every stored var is guarded by lock
    private let lock = NSLock()
    private var stored: CheckedContinuation<T, Error>?   // guarded by lock

    var continuation: CheckedContinuation<T, Error>? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    func resume(_ result: Result<T, Error>) {
        let continuation: CheckedContinuation<T, Error>? = lock.withLock {
            defer { stored = nil }
            return stored
        }
        continuation?.resume(with: result)
    }
}

/// Polls `condition` every 10 ms (bounded) from async code, for effects that have no callback.
func eventuallyAsync(timeout: TimeInterval = 5, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}

/// The part of the server's /echo document the tests decode.
struct EchoDocument: Decodable, Sendable, Equatable {
    let method: String
    let path: String
    let query: [String: String]
    let body: String
}
