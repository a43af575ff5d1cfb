import Foundation
@testable import OperationNetworking
import XCTest

/// A transfer delegate that only records how the transfer ended; `completed` is guarded by `lock`.
final class TransferOutcomeRecorder: TransferDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var result: Bool?   // guarded by lock
    /// The delivery batches the start and the end came in, kept alive so identities stay unique.
    private var batches: (start: CompletionBatch?, end: CompletionBatch?) = (nil, nil)   // guarded by lock
    private let done: XCTestExpectation
    private let started: XCTestExpectation?

    init(_ done: XCTestExpectation, started: XCTestExpectation? = nil) {
        self.done = done
        self.started = started
    }

    var completed: Bool? { lock.withLock { result } }
    /// Whether the start and the end were delivered in one batch (`nil` until both were).
    var startAndEndSharedABatch: Bool? {
        lock.withLock {
            guard let start = batches.start, let end = batches.end else { return nil }
            return start === end
        }
    }

    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        request
    }
    func transfer(_ transfer: Transfer, didReceive head: ResponseHead) {}
    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        .deliver
    }
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transferDidStart(_ transfer: Transfer, batch: CompletionBatch) {
        lock.withLock { batches.start = batch }
        started?.fulfill()
    }
    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {}
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        let completed: Bool
        if case .completed = outcome { completed = true } else { completed = false }
        lock.withLock {
            result = completed
            batches.end = batch
        }
        done.fulfill()
    }
}
