import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Idle keep-alive connections are closed on time without any traffic, and at once (within the idle
/// check's second) when their peer closed them, so no socket lingers in CLOSE-WAIT.
final class IdleConnectionTests: ServerTestCase {
    /// This process's TCP sockets to 127.0.0.1:`port` in one of `states` (/proc/net/tcp's hex codes;
    /// 01 is ESTABLISHED, 08 CLOSE-WAIT).
    /// Read to its end: `String(contentsOfFile:)` gets only the first 4 KiB of a /proc table (one
    /// read), which misses sockets once the table has a few dozen lines.
    private static func sockets(toPort port: Int, states: Set<String>) -> Int {
        let handle = FileHandle(forReadingAtPath: "/proc/net/tcp")
        defer { try? handle?.close() }
        let table = ((try? handle?.readToEnd()) ?? nil).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let remote = String(format: ":%04X", port)
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[2].hasSuffix(remote) && states.contains(String(fields[3]))
        }.count
    }

    func testAConnectionItsPeerClosedIsClosedWithoutTraffic() throws {
        let raw = try XCTUnwrap(RawServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))   // then it closes
        defer { raw.stop() }
        let outcome = run(HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(raw.url))))
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertTrue(eventually(timeout: 4) { [port = raw.port] in IdleConnectionTests.sockets(toPort: port, states: ["08"]) == 0 },
                      "a socket its peer closed stayed in CLOSE-WAIT")
    }

    func testAConnectionItsPeerClosedLeavesCloseWaitWhileADownloadRuns() throws {
        let raw = try XCTUnwrap(RawServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))   // then it closes
        defer { raw.stop() }
        // About 8 s of body: 100 pieces of 1,000 bytes, 80 ms apart.
        let download = HTTPRequestOperation(request: request("/chunked/100000?chunkSize=1000&chunkDelayMs=80", timeout: 30))
        let (downloaded, _) = recordOutcome(of: download)
        startAndAwaitBytes(download, atLeast: 2_000)
        let outcome = run(HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(raw.url))))
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertTrue(eventually(timeout: 2.5) { [port = raw.port] in IdleConnectionTests.sockets(toPort: port, states: ["08"]) == 0 },
                      "a socket its peer closed stayed in CLOSE-WAIT while a download ran")
        XCTAssertFalse(download.isFinished, "the download ended before the check, so nothing else was running")
        download.cancel()
        wait(for: [downloaded], timeout: 10)
    }

    func testAPeerClosingOneConnectionLeavesTheOthersForReuse() throws {
        let raw = try XCTUnwrap(RawServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))   // then it closes
        defer { raw.stop() }
        let thread = NetworkThread()   // the idle lifetime (30 s) is not reached in this test
        defer { thread.shutDown() }
        let first = expectation(description: "first request to the test server")
        _ = submit("/echo", to: thread, done: first)
        wait(for: [first], timeout: 5)
        let closing = expectation(description: "request to the server that closes")
        _ = submit(URLRequest(url: try XCTUnwrap(raw.url)), to: thread, done: closing)
        wait(for: [closing], timeout: 5)
        XCTAssertTrue(eventually { thread.statistics.connections == 2 }, "the closed connection was not kept by curl")
        // The closed one is shut down (it leaves CLOSE-WAIT and the table) within the idle check's second.
        XCTAssertTrue(eventually(timeout: 4) { [port = raw.port] in
            IdleConnectionTests.sockets(toPort: port, states: ["01", "08"]) == 0
        }, "the connection its peer closed was not shut down")
        XCTAssertEqual(server.openConnections, 1, "the test server's idle connection was closed with the other")
        // The test server's connection serves the next requests, and curl closes the dead one's
        // descriptor when it next looks through its connections (at most once a second).
        let deadline = Date().addingTimeInterval(5)
        repeat {
            let again = expectation(description: "request to the test server again")
            _ = submit("/echo", to: thread, done: again)
            wait(for: [again], timeout: 5)
        } while thread.statistics.connections != 1 && Date() < deadline
        XCTAssertEqual(thread.statistics.connections, 1, "the dead connection's descriptor stayed open")
        XCTAssertEqual(server.acceptedConnections, 1, "the test server's idle connection was not reused")
    }

    func testAnHTTPSConnectionItsServerClosesIsShutDownAloneAndTheNextRequestsSucceed() throws {
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking Idle Test Root")
        let leaf = try authority.issue()
        let nginx = try ExternalServer.nginxHTTP2(certificatePEM: CertificateData.pem([leaf.certificate]),
                                                  keyPEM: leaf.privateKeyPEM, keepaliveSeconds: 1)
        defer { nginx.stop() }
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        let secure = try XCTUnwrap(URL(string: "https://127.0.0.1:\(nginx.port)/small"))
        func fetchSecure() -> Outcome {
            let operation = HTTPRequestOperation(request: URLRequest(url: secure))
            operation.securityPolicy = policy
            return run(operation)
        }
        XCTAssertTrue(run(request("/echo")).1.isSuccess)
        let first = fetchSecure()
        XCTAssertTrue(first.isSuccess, "\(String(describing: first.error))")
        XCTAssertEqual(IdleConnectionTests.sockets(toPort: nginx.port, states: ["01"]), 1, "no idle connection to nginx")
        // nginx closes its connection after a second idle (TLS close_notify, HTTP/2 GOAWAY, FIN); the
        // network thread shuts it down within its next check, without a signal or a crash.
        XCTAssertTrue(eventually(timeout: 8) { [port = nginx.port] in
            IdleConnectionTests.sockets(toPort: port, states: ["01", "08"]) == 0
        }, "the connection nginx closed was not shut down")
        XCTAssertTrue(run(request("/echo")).1.isSuccess)
        XCTAssertEqual(server.acceptedConnections, 1, "the plain connection was closed with the TLS one")
        let second = fetchSecure()
        XCTAssertTrue(second.isSuccess, "\(String(describing: second.error))")
        // nginx writes a request's log line after its response, so the line may trail the answer.
        XCTAssertTrue(eventually(timeout: 5) { nginx.connections(serving: "/small").count == 2 },
                      "the second HTTPS request did not open a new connection: \(nginx.connections(serving: "/small"))")
    }

    func testAnIdleConnectionIsClosedAfterItsLifetimeWithoutTraffic() {
        let thread = NetworkThread(idleConnectionLifetime: 1)
        defer { thread.shutDown() }
        let done = expectation(description: "transfer ended")
        _ = submit("/echo", to: thread, done: done)
        wait(for: [done], timeout: 5)
        XCTAssertEqual(server.openConnections, 1, "kept alive after the response")
        XCTAssertTrue(eventually(timeout: 4) { [server = server!] in server.openConnections == 0 },
                      "an idle connection outlived its 1 s lifetime")
    }

    func testABusyConnectionIsKept() {
        let thread = NetworkThread(idleConnectionLifetime: 1)
        defer { thread.shutDown() }
        for _ in 0..<3 {
            let done = expectation(description: "transfer ended")
            _ = submit("/echo", to: thread, done: done)
            wait(for: [done], timeout: 5)
        }
        XCTAssertEqual(server.acceptedConnections, 1, "requests in a row share one connection")
    }
}
