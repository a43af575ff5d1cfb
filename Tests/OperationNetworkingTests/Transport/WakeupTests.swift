import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A network thread that started while the process had no descriptors left (so neither libcurl's
/// wake-up socket pair nor the library's pipe could be made) still takes new requests promptly once
/// descriptors are back, instead of at its next idle poll a second later.
final class WakeupTests: ServerTestCase {
    func testAThreadStartedWithoutDescriptorsIsWokenPromptly() throws {
        var saved = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)
        var none = saved
        none.rlim_cur = 0
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &none), 0)
        let thread = NetworkThread()          // its multi handle and pipe cannot get descriptors now
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)

        for _ in 0..<3 {
            XCTAssertTrue(eventually { thread.isParked })
            let done = expectation(description: "transfer ended")
            let recorder = OutcomeRecorder(done)
            let transfer = Transfer(request: request("/echo"), outputStream: nil, resumeFrom: nil, initialBody: Data(),
                                    delegate: recorder)
            thread.submit(.add(transfer))
            wait(for: [done], timeout: 0.5)   // the idle poll would take a second
            XCTAssertEqual(recorder.completed, true)
        }
    }
}

/// A transfer delegate that only records how the transfer ended; `completed` is guarded by `lock`.
private final class OutcomeRecorder: TransferDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var result: Bool?   // guarded by lock
    private let done: XCTestExpectation

    init(_ done: XCTestExpectation) { self.done = done }

    var completed: Bool? { lock.withLock { result } }

    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        request
    }
    func transfer(_ transfer: Transfer, didReceive head: ResponseHead) {}
    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        .deliver
    }
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transferDidStart(_ transfer: Transfer, batch: CompletionBatch) {}
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        let completed: Bool
        if case .completed = outcome { completed = true } else { completed = false }
        lock.withLock { result = completed }
        done.fulfill()
    }
}
