import Foundation
@testable import OperationNetworking
import XCTest

/// A request's timeout runs from when it was asked for, whatever it waits behind: the probe of its
/// https origin, or a full set of active transfers. The k-th request to a dead endpoint ends at its
/// own timeout, not after k of them.
final class QueuedTimeoutTests: ServerTestCase {
    /// Eight GETs to an https endpoint that accepts TCP and never answers the TLS handshake (a raw
    /// socket server that reads and says nothing): the first goes alone to learn the origin's protocol
    /// and the others are held for it, yet each fails with `.timedOut` at its own 3 s.
    func testRequestsHeldBehindADeadTLSEndpointEachEndAtTheirOwnTimeout() throws {
        let tarpit = try XCTUnwrap(RawServer(pieces: [], holdsOpen: true))
        defer { tarpit.stop() }
        let timeout: TimeInterval = 3
        let count = 8
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        let done = expectation(description: "\(count) ends")
        done.expectedFulfillmentCount = count
        let ends = Recorder<String>()
        for index in 0..<count {
            var request = URLRequest(url: try XCTUnwrap(URL(string: "https://127.0.0.1:\(tarpit.port)/\(index)")))
            request.timeoutInterval = timeout
            let operation = HTTPRequestOperation(request: request)
            let asked = Date()
            operation.setCompletionBlockWithSuccess({ _, _ in
                ends.append("\(index): succeeded")
                done.fulfill()
            }, failure: { _, error in
                let elapsed = Date().timeIntervalSince(asked)
                let code = (error as? URLError)?.code
                // Not before its own timeout (it counts from when the network thread took it in, just
                // after), and well before a second one.
                if code != .timedOut || elapsed < timeout - 0.1 || elapsed >= 2 * timeout {
                    ends.append("\(index): \(code.map { "\($0.rawValue)" } ?? "\(error)") after \(elapsed) s")
                }
                done.fulfill()
            })
            queue.addOperation(operation)
        }
        // Long enough for the old behaviour (each held request waited for the one before it to time
        // out) to end every request, so a regression shows as the bound, not as a missing handler.
        wait(for: [done], timeout: Double(count + 2) * timeout)
        XCTAssertEqual(ends.all, [], "each request ends with .timedOut between 1× and 2× its timeout")
    }

    /// Requests held for a probe that has a longer timeout of its own end at theirs, while the probe
    /// still runs: waiting for an origin's protocol is no reason to wait out another request's timeout.
    func testRequestsHeldForALongerProbeEndAtTheirOwnTimeout() throws {
        let tarpit = try XCTUnwrap(RawServer(pieces: [], holdsOpen: true))
        defer { tarpit.stop() }
        var probeRequest = URLRequest(url: try XCTUnwrap(URL(string: "https://127.0.0.1:\(tarpit.port)/probe")))
        probeRequest.timeoutInterval = 60
        let probe = HTTPRequestOperation(request: probeRequest)
        let probeEnd = expectation(description: "probe ended")
        probe.setCompletionBlockWithSuccess({ _, _ in probeEnd.fulfill() }, failure: { _, _ in probeEnd.fulfill() })
        probe.start()
        XCTAssertTrue(eventually { NetworkThread.shared.statistics.active == 1 }, "the probe is on curl")
        let timeout: TimeInterval = 2
        let done = expectation(description: "held requests ended")
        done.expectedFulfillmentCount = 4
        let ends = Recorder<String>()
        for index in 0..<4 {
            var request = URLRequest(url: try XCTUnwrap(URL(string: "https://127.0.0.1:\(tarpit.port)/\(index)")))
            request.timeoutInterval = timeout
            let operation = HTTPRequestOperation(request: request)
            let asked = Date()
            operation.setCompletionBlockWithSuccess({ _, _ in
                ends.append("\(index): succeeded")
                done.fulfill()
            }, failure: { _, error in
                let elapsed = Date().timeIntervalSince(asked)
                if (error as? URLError)?.code != .timedOut || elapsed >= 2 * timeout {
                    ends.append("\(index): \(error) after \(elapsed) s")
                }
                done.fulfill()
            })
            operation.start()
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(ends.all, [], "each held request ends with .timedOut before twice its timeout")
        XCTAssertFalse(probe.isFinished, "the probe, with its 60 s, still runs")
        probe.cancel()
        wait(for: [probeEnd], timeout: 5)
    }

    /// A transfer waiting in the FIFO for a free slot (the thread's only slot is held by a stalled
    /// transfer) fails with `.timedOut` at its own timeout, while the stalled one still runs, and its
    /// request never reaches the server.
    func testATransferWaitingForASlotTimesOutWhileItWaits() {
        let thread = NetworkThread(activeLimit: 1)
        defer { thread.shutDown() }
        let stalledEnd = expectation(description: "stalled transfer ended")
        let waitingEnd = expectation(description: "waiting transfer ended")
        let stalledRecorder = ErrorRecorder(stalledEnd)
        let waitingRecorder = ErrorRecorder(waitingEnd)
        let stalled = Transfer(request: request("/stall", timeout: 60), outputStream: nil, resumeFrom: nil,
                               initialBody: Data(), delegate: stalledRecorder)
        let waiting = Transfer(request: request("/echo", timeout: 1), outputStream: nil, resumeFrom: nil,
                               initialBody: Data(), delegate: waitingRecorder)
        thread.submit(.add(stalled))
        XCTAssertTrue(eventually { [server = server!] in server.requests(path: "/stall").count == 1 })
        let asked = Date()
        thread.submit(.add(waiting))
        wait(for: [waitingEnd], timeout: 10)
        XCTAssertEqual((waitingRecorder.error as? URLError)?.code, .timedOut)
        XCTAssertLessThan(Date().timeIntervalSince(asked), 2, "the waiting transfer ended at its own timeout")
        XCTAssertFalse(stalledRecorder.ended, "the stalled transfer still holds the slot")
        thread.submit(.cancel(stalled))
        wait(for: [stalledEnd], timeout: 5)
        XCTAssertEqual(server.requests(path: "/echo").count, 0, "the timed-out request never went out")
    }
}

/// A transfer delegate that records the error a transfer ended with; its fields are guarded by `lock`.
private final class ErrorRecorder: TransferDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var outcome: TransferOutcome?   // guarded by lock
    private let done: XCTestExpectation

    init(_ done: XCTestExpectation) {
        self.done = done
    }

    var ended: Bool { lock.withLock { outcome != nil } }
    var error: Error? {
        lock.withLock {
            if case .failed(let error) = outcome { return error }
            return nil
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
    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {}
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        lock.withLock { self.outcome = outcome }
        done.fulfill()
    }
}
