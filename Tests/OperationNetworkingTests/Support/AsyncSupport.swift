import Foundation
import XCTest

/// Thrown by `withTimeout` when the body did not finish in time.
struct TimedOut: Error {}

/// Runs `body`, failing with `TimedOut` after `seconds`: an await that never returns fails the test
/// instead of hanging the suite. The body's task is cancelled on a timeout.
func withTimeout<T: Sendable>(_ seconds: TimeInterval = 10,
                              _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            throw TimedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut() }
        return first
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
