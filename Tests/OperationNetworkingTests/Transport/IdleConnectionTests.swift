import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Idle keep-alive connections are closed on time without any traffic, and at once (within the idle
/// check's second) when their peer closed them, so no socket lingers in CLOSE-WAIT.
final class IdleConnectionTests: ServerTestCase {
    /// This process's TCP sockets to 127.0.0.1:`port` in `state` (/proc/net/tcp's hex code; 08 is CLOSE-WAIT).
    private static func sockets(toPort port: Int, state: String) -> Int {
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        let remote = String(format: ":%04X", port)
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[2].hasSuffix(remote) && fields[3] == state
        }.count
    }

    func testAConnectionItsPeerClosedIsClosedWithoutTraffic() throws {
        let raw = try XCTUnwrap(RawServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))   // then it closes
        defer { raw.stop() }
        let outcome = run(HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(raw.url))))
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertTrue(eventually(timeout: 4) { [port = raw.port] in IdleConnectionTests.sockets(toPort: port, state: "08") == 0 },
                      "a socket its peer closed stayed in CLOSE-WAIT")
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
