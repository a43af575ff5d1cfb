import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// No request of a cancelled transfer starts once the cancel returned, even before the network
/// thread read the cancel command: the checks at admission and in the pre-request callback.
final class CancelledTransferSendsNothingTests: ServerTestCase {
    /// A transfer waiting for a slot, marked cancelled, is never admitted when the slot frees.
    func testAWaitingTransferMarkedCancelledIsNeverSent() {
        let thread = NetworkThread(activeLimit: 1)
        defer { thread.shutDown() }
        let stalledEnd = expectation(description: "stalled transfer ended")
        let waitingEnd = expectation(description: "waiting transfer ended")
        let stalled = Transfer(request: request("/stall"), outputStream: nil, resumeFrom: nil, initialBody: Data(),
                               delegate: TransferOutcomeRecorder(stalledEnd))
        let waitingRecorder = TransferOutcomeRecorder(waitingEnd)
        let waiting = Transfer(request: request("/echo"), outputStream: nil, resumeFrom: nil, initialBody: Data(),
                               delegate: waitingRecorder)
        thread.submit(.add(stalled))
        thread.submit(.add(waiting))
        XCTAssertTrue(eventually { [server = server!] in server.requests(path: "/stall").count == 1 && thread.statistics.waiting == 1 })
        waiting.requestCancel()              // as `cancel()` does before its command reaches the thread
        thread.submit(.cancel(stalled))      // frees the slot
        wait(for: [stalledEnd, waitingEnd], timeout: 5)
        XCTAssertEqual(waitingRecorder.completed, false)
        XCTAssertEqual(server.requests(path: "/echo").count, 0, "the cancelled transfer's request never went out")
    }

    /// A transfer marked cancelled between two hops sends no request for the next one: the
    /// pre-request callback stops it although no cancel command ever reached the thread.
    func testATransferMarkedCancelledBeforeItsNextHopSendsNothingMore() {
        let thread = NetworkThread()
        defer { thread.shutDown() }
        let ended = expectation(description: "ended")
        let delegate = CancellingRedirectDelegate(ended)
        var redirect = URLComponents(url: server.url("/redirect-to"), resolvingAgainstBaseURL: false)
        redirect?.queryItems = [URLQueryItem(name: "url", value: server.url("/echo").absoluteString)]
        let transfer = Transfer(request: URLRequest(url: redirect?.url ?? server.url("/")), outputStream: nil,
                                resumeFrom: nil, initialBody: Data(), delegate: delegate)
        thread.submit(.add(transfer))
        wait(for: [ended], timeout: 5)
        XCTAssertEqual(delegate.redirects, 1)
        XCTAssertEqual(delegate.endedCancelled, true)
        XCTAssertEqual(server.requests(path: "/redirect-to").count, 1)
        XCTAssertEqual(server.requests(path: "/echo").count, 0, "the next hop's request never went out")
    }
}

/// Follows a redirect after marking its transfer cancelled (what a `cancel()` racing the hop does).
private final class CancellingRedirectDelegate: TransferDelegate, Sendable {
    private struct Seen {
        var redirectCount = 0
        var cancelled: Bool?
    }
    private let seen = Protected(Seen())
    private let done: XCTestExpectation

    init(_ done: XCTestExpectation) { self.done = done }

    var redirects: Int { seen.value.redirectCount }
    var endedCancelled: Bool? { seen.value.cancelled }

    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        seen.withLock { $0.redirectCount += 1 }
        transfer.requestCancel()
        return request
    }
    func transfer(_ transfer: Transfer, didReceive head: ResponseHead) {}
    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        .deliver
    }
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}
    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {}
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        let wasCancelled: Bool
        if case .cancelled = outcome { wasCancelled = true } else { wasCancelled = false }
        seen.withLock { $0.cancelled = wasCancelled }
        done.fulfill()
    }
}
