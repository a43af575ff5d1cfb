import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Bad input and misbehaving servers end in the documented `URLError`, never a crash or a hang,
/// while other operations keep running.
final class TransportFailureTests: ServerTestCase {
    private func assertFails(_ request: URLRequest, with code: URLError.Code, timeout: TimeInterval = 10,
                             file: StaticString = #filePath, line: UInt = #line) {
        let (operation, outcome) = run(request, timeout: timeout)
        XCTAssertEqual(outcome.urlErrorCode, code, "\(String(describing: outcome.error))", file: file, line: line)
        XCTAssertTrue(operation.isFinished || eventually { operation.isFinished }, file: file, line: line)
        if code != .cancelled {
            let info = (outcome.error as? URLError)?.userInfo ?? [:]
            XCTAssertNotNil(info[NSURLErrorFailingURLErrorKey], file: file, line: line)
        }
    }

    func testUnsupportedSchemeFails() throws {
        assertFails(URLRequest(url: try XCTUnwrap(URL(string: "ftp://127.0.0.1/file"))), with: .unsupportedURL)
    }

    func testURLWithoutHostFails() throws {
        assertFails(URLRequest(url: try XCTUnwrap(URL(string: "http:///nohost"))), with: .badURL)
    }

    func testUnresolvableHostFails() throws {
        assertFails(URLRequest(url: try XCTUnwrap(URL(string: "http://no-such-host.invalid/"))), with: .cannotFindHost)
    }

    func testRefusedPortFails() throws {
        let closed = try TestServer()
        let port = closed.port
        closed.shutdown()
        let (_, outcome) = run(URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:\(port)/"))))
        XCTAssertEqual(outcome.urlErrorCode, .cannotConnectToHost)
        let info = (outcome.error as? URLError)?.userInfo ?? [:]
        XCTAssertEqual(info[CurlErrorCodeKey] as? Int, 7)
        XCTAssertNotNil(info[CurlErrorMessageKey] as? String)
    }

    func testServerClosingMidBodyIsConnectionLost() {
        assertFails(request("/drop/5000"), with: .networkConnectionLost)
    }

    func testStalledBodyTimesOut() {
        let started = Date()
        assertFails(request("/stall", timeout: 0.5), with: .timedOut)
        XCTAssertLessThan(Date().timeIntervalSince(started), 3)
    }

    func testServerThatNeverAnswersTimesOut() {
        assertFails(request("/stall-headers", timeout: 0.5), with: .timedOut)
    }

    func testHugeResponseHeadersAreRefused() {
        assertFails(request("/huge-headers/100"), with: .cannotParseResponse)
    }

    func testHeaderInjectionNeverReachesTheWire() {
        // Foundation's URLRequest drops such a value; the transport re-checks every header anyway.
        var request = request("/echo")
        request.setValue("a\r\nX-Injected: 1", forHTTPHeaderField: "X-Bad")
        XCTAssertTrue(run(request).1.isSuccess)
        XCTAssertNil(server.requests.first?.header("X-Injected"))
        XCTAssertFalse(Transfer.isValidHeader(name: "X-Bad", value: "a\r\nX-Injected: 1"))
        XCTAssertFalse(Transfer.isValidHeader(name: "X-Bad", value: "a\u{0}b"))
        XCTAssertFalse(Transfer.isValidHeader(name: "Bad Name", value: "v"))
        XCTAssertTrue(Transfer.isValidHeader(name: "X-Good", value: "v; q=1"))
    }

    func testFailuresDoNotDisturbOtherOperations() {
        let queue = OperationQueue()
        let good = (0..<20).map { _ in HTTPRequestOperation(request: request("/bytes/50000")) }
        let bad = [request("/drop/1000"), request("/stall", timeout: 0.5), request("/huge-headers/100"),
                   request("/redirect-loop")].map { HTTPRequestOperation(request: $0) }
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = good.count + bad.count
        let failures = Recorder<URLError.Code>()
        for operation in good + bad {
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() },
                                                    failure: { _, error in
                failures.append((error as? URLError)?.code ?? .unknown)
                done.fulfill()
            })
        }
        queue.addOperations(bad + good, waitUntilFinished: false)
        wait(for: [done], timeout: 15)
        XCTAssertEqual(Set(failures.all), [.networkConnectionLost, .timedOut, .cannotParseResponse, .httpTooManyRedirects])
        for operation in good { XCTAssertEqual(operation.responseData, deterministicBytes(50000)) }
    }

    func testNoFileDescriptorOrHandleLeaks() throws {
        // Warm up: the network thread, its wakeup pipe and the test server's first connection.
        XCTAssertTrue(run(request("/bytes/10")).1.isSuccess)
        let before = openFileDescriptorCount()
        let dead = try TestServer()
        let deadPort = dead.port
        dead.shutdown()
        for round in 0..<20 {
            let requests = [request("/drop/1000"), request("/huge-headers/100"), request("/bytes/100"),
                            URLRequest(url: server.url("/stall-headers")).withTimeout(0.2),
                            URLRequest(url: URL(string: "http://127.0.0.1:\(deadPort)/")!).withTimeout(2)]
            for request in requests { _ = run(request) }
            _ = round
        }
        XCTAssertTrue(eventually { NetworkThread.shared.statistics.active == 0 })
        XCTAssertTrue(eventually { CurlEasyHandle.liveCount == NetworkThread.shared.statistics.pooledHandles },
                      "live \(CurlEasyHandle.liveCount), pooled \(NetworkThread.shared.statistics.pooledHandles)")
        // Connections the server dropped are closed; at most the reused keep-alive one stays open.
        XCTAssertTrue(eventually { openFileDescriptorCount() <= before + 2 },
                      "fds before \(before), after \(openFileDescriptorCount())")
    }
}

extension URLRequest {
    /// A copy with `timeoutInterval` set.
    func withTimeout(_ seconds: TimeInterval) -> URLRequest {
        var copy = self
        copy.timeoutInterval = seconds
        return copy
    }
}
