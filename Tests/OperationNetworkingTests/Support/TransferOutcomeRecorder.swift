import Foundation
@testable import OperationNetworking
import XCTest

/// A transfer delegate that only records how the transfer ended.
final class TransferOutcomeRecorder: TransferDelegate, Sendable {
    private let result = Protected<Bool?>(nil)
    private let done: XCTestExpectation

    init(_ done: XCTestExpectation) {
        self.done = done
    }

    var completed: Bool? { result.value }

    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        request
    }
    func transfer(_ transfer: Transfer, didReceive head: ResponseHead) {}
    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        .deliver
    }
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {}
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        let completed: Bool
        if case .completed = outcome { completed = true } else { completed = false }
        result.withLock { $0 = completed }
        done.fulfill()
    }
}
