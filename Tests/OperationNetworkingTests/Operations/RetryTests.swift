import Foundation
import Logging
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `RetryPolicy`: the same operation sends its request again, on the wire, as the policy says.
final class RetryTests: ServerTestCase {
    private let quick = RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 5)

    private func flaky(_ failures: Int, query: String = "") -> URLRequest {
        request("/flaky/\(failures)/\(UUID().uuidString)\(query)")
    }

    func testARetryableStatusIsSentAgainUntilItSucceeds() throws {
        let operation = HTTPRequestOperation(request: flaky(2))
        operation.retryPolicy = quick
        let progressTotals = Recorder<Int64>()
        operation.setDownloadProgressBlock { _, total, _ in progressTotals.append(total) }
        let (done, box) = recordOutcome(of: operation)
        operation.start()
        wait(for: [done], timeout: 10)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(server.requests.count, 3, "three attempts on the wire")
        XCTAssertEqual(operation.responseString, "success 3", "the last attempt's body is the one delivered")
        XCTAssertEqual(operation.attempts, 3)
        XCTAssertEqual(operation.metrics?.attempts, 3)
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertTrue(progressTotals.all.allSatisfy { $0 <= 9 }, "progress counts each attempt from zero")
    }

    func testTheLastAttemptsResponseIsDeliveredWhenAttemptsRunOut() {
        let operation = HTTPRequestOperation(request: flaky(5))
        operation.retryPolicy = quick
        let outcome = run(operation)
        XCTAssertEqual(server.requests.count, 3)
        XCTAssertEqual(operation.response?.statusCode, 503)
        XCTAssertEqual(operation.responseString, "failure 3")
        XCTAssertEqual((outcome.error as NSError?)?.code, NSURLErrorBadServerResponse)
    }

    func testNoRetryByDefaultNorForAPOSTUnderTheDefaultMethods() {
        XCTAssertEqual(HTTPRequestOperation(request: flaky(1)).retryPolicy, .none)
        _ = run(HTTPRequestOperation(request: flaky(1)))
        XCTAssertEqual(server.requests.count, 1)
        server.clearLog()
        var post = flaky(1)
        post.httpMethod = "POST"
        post.httpBody = Data("x".utf8)
        let operation = HTTPRequestOperation(request: post)
        operation.retryPolicy = quick
        _ = run(operation)
        XCTAssertEqual(server.requests.count, 1, "POST is not idempotent: not retried by default")
    }

    func testRetryAfterSetsTheDelayAndOneBeyondMaxDelayIsDeliveredAsIs() throws {
        let operation = HTTPRequestOperation(request: flaky(1, query: "?retryAfter=1"))
        operation.retryPolicy = quick
        XCTAssertTrue(run(operation).isSuccess)
        let times = server.requests.map(\.receivedAt)
        XCTAssertEqual(times.count, 2)
        XCTAssertGreaterThanOrEqual(times[1].timeIntervalSince(times[0]), 0.9, "Retry-After: 1 waited a second")
        server.clearLog()
        let impatient = HTTPRequestOperation(request: flaky(1, query: "?retryAfter=60"))
        impatient.retryPolicy = quick   // maxDelay 5 s
        _ = run(impatient)
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertEqual(impatient.response?.statusCode, 503)
    }

    func testATransportFailureIsRetriedAndCancelDuringTheDelayEndsAtOnce() throws {
        var refused = URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:1/")))
        refused.timeoutInterval = 5
        let failing = HTTPRequestOperation(request: refused)
        failing.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 0.02)
        XCTAssertEqual(run(failing).urlErrorCode, .cannotConnectToHost)
        XCTAssertEqual(failing.attempts, 3)

        let waiting = HTTPRequestOperation(request: flaky(3, query: "?retryAfter=30"))
        waiting.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 60)
        let (done, box) = recordOutcome(of: waiting)
        waiting.start()
        let server = self.server!
        XCTAssertTrue(eventually { server.requests.count == 1 && waiting.attempts == 2 })
        let cancelledAt = Date()
        waiting.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertLessThan(Date().timeIntervalSince(cancelledAt), 3, "the 30 s delay did not hold the cancel")
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testACallersStreamIsNeverRetriedButASerializedMultipartBodyIsRebuilt() throws {
        var streamed = flaky(1)
        streamed.httpMethod = "PUT"
        streamed.httpBodyStream = InputStream(data: Data("body".utf8))
        let once = HTTPRequestOperation(request: streamed)
        once.retryPolicy = quick
        _ = run(once)
        XCTAssertEqual(server.requests.count, 1, "a caller's stream cannot be read again")
        server.clearLog()

        let serializer = HTTPRequestSerializer()
        let url = server.url("/flaky/1/\(UUID().uuidString)").absoluteString
        let multipart = try serializer.multipartFormRequest(method: "POST", urlString: url, parameters: ["a": "1"]) {
            $0.appendPart(withFileData: Data(repeating: 0x62, count: 10_000), name: "file", fileName: "b.bin",
                          mimeType: "application/octet-stream")
        }
        let twice = HTTPRequestOperation(request: multipart)
        var policy = quick
        policy.retryableMethods.insert("POST")
        twice.retryPolicy = policy
        XCTAssertTrue(run(twice).isSuccess)
        let bodies = server.requests.map(\.body)
        XCTAssertEqual(bodies.count, 2)
        XCTAssertEqual(bodies.first, bodies.last, "the second attempt sent the whole body again")
        XCTAssertGreaterThan(bodies.last?.count ?? 0, 10_000)
    }

    func testBackoffIsFullJitterUnderItsCeiling() {
        let policy = RetryPolicy(maxAttempts: 10, baseDelay: 0.5, maxDelay: 3)
        for attempt in 1...8 {
            let ceiling = min(3, 0.5 * pow(2, Double(attempt - 1)))
            for _ in 0..<50 { XCTAssertLessThanOrEqual(policy.backoff(after: attempt), ceiling) }
        }
        XCTAssertEqual(RetryPolicy.retryAfter("120"), 120)
        let date = Date(timeIntervalSince1970: 1_000_000)
        XCTAssertEqual(RetryPolicy.retryAfter("Mon, 12 Jan 1970 13:46:50 GMT", now: date), 10)
        XCTAssertNil(RetryPolicy.retryAfter("soon"))
    }

    func testTheManagerCopiesItsPolicyOntoOperationsAndArchivesIt() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.url("/"))
        manager.responseSerializer = HTTPResponseSerializer()
        var policy = quick
        policy.retryableStatusCodes = [503, 599]
        policy.retryableMethods = ["GET", "PATCH"]
        manager.retryPolicy = policy
        let done = expectation(description: "success")
        let operation = try XCTUnwrap(manager.GET("flaky/1/\(UUID().uuidString)", parameters: nil, success: { operation, _ in
            XCTAssertEqual(operation.attempts, 2)
            done.fulfill()
        }, failure: { _, error in XCTFail("\(error)") }))
        XCTAssertEqual(operation.retryPolicy, policy)
        wait(for: [done], timeout: 10)

        let data = try NSKeyedArchiver.archivedData(withRootObject: manager, requiringSecureCoding: true)
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: data)
        XCTAssertEqual(restored.retryPolicy, policy)
        XCTAssertEqual((manager.copy() as? HTTPRequestOperationManager)?.retryPolicy, policy)
        XCTAssertNil(RetryPolicy(archived: ["maxAttempts": 0]), "a damaged policy is refused, not defaulted")
    }

    /// libcurl sends a request again on a fresh connection when a reused keep-alive connection turns
    /// out to be closed, whatever the policy: a stale connection never surfaces as a failure.
    func testAStaleKeepAliveConnectionIsNeverAFailureEvenForAPOST() throws {
        let peer = try XCTUnwrap(RawServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        defer { peer.stop() }
        for method in ["GET", "POST", "GET", "POST"] {
            var request = URLRequest(url: try XCTUnwrap(peer.url))
            request.httpMethod = method
            if method == "POST" { request.httpBody = Data("payload".utf8) }
            let operation = HTTPRequestOperation(request: request)
            XCTAssertEqual(operation.retryPolicy, .none)
            XCTAssertNil(run(operation).error, method)
            XCTAssertEqual(operation.responseData, Data("ok".utf8))
        }
    }

    /// Monitors hear of every attempt: its response, then the retry, in order; the log line counts them.
    final class RetryMonitor: EventMonitor, @unchecked Sendable {   // events is guarded by its own lock
        let events = Recorder<String>()
        func operationDidStart(_ operation: URLConnectionOperation) { events.append("start") }
        func operation(_ operation: URLConnectionOperation, didReceive response: HTTPURLResponse) {
            events.append("response \(response.statusCode)")
        }
        func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
            events.append("retry \(attempt) error=\(error == nil ? "none" : "some")")
        }
        func operationDidFinish(_ operation: URLConnectionOperation) { events.append("finish") }
    }

    func testMonitorsSeeEachAttemptAndTheLogCountsThem() throws {
        let monitor = RetryMonitor()
        let entries = Recorder<LogEntry>()
        let logging = LoggingEventMonitor(logger: Logger(label: "retry") { _ in CapturingLogHandler(entries: entries) })
        let operation = HTTPRequestOperation(request: flaky(2))
        operation.retryPolicy = quick
        operation.eventMonitors = [monitor, logging]
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertTrue(eventually { monitor.events.all.last == "finish" })
        XCTAssertEqual(monitor.events.all, ["start", "response 503", "retry 2 error=none", "response 503",
                                            "retry 3 error=none", "response 200", "finish"])
        XCTAssertTrue(eventually { entries.all.contains { $0.level == .info } })
        XCTAssertEqual(entries.all.first { $0.level == .info }?.metadata["attempts"], "3")
    }
}
