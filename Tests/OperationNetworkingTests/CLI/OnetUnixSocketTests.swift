import Foundation
import OperationNetworkingTestServer
import XCTest

/// `onet request --unix-socket PATH` (curl's spelling) against the test server on a Unix domain
/// socket: the request reaches it with the URL's host as `Host`, and `--curl` shows the option.
final class OnetUnixSocketTests: LibraryTestCase {
    func testTheRequestGoesOverTheSocketNamedByUnixSocket() throws {
        let server = try makeSocketServer(in: try makeSocketFolder())
        let socket = try XCTUnwrap(server.unixSocketPath)
        let run = try runOnetCapturing(["request", "--unix-socket", socket, "http://docker.test/echo", "from==onet"])
        XCTAssertEqual(run.status, 0, run.description)
        let wire = try XCTUnwrap(server.requests(path: "/echo").first, run.description)
        XCTAssertEqual(wire.header("Host"), "docker.test")
        XCTAssertEqual(wire.query["from"], "onet")
        let echoed = try XCTUnwrap(JSONSerialization.jsonObject(with: run.stdout) as? [String: Any], run.description)
        XCTAssertEqual(echoed["path"] as? String, "/echo", "the server's answer is the output")

        let shown = try runOnetCapturing(["request", "--curl", "--unix-socket", socket, "http://docker.test/echo"])
        XCTAssertEqual(shown.status, 0, shown.description)
        XCTAssertTrue(shown.text.contains("--unix-socket '\(socket)'"), shown.text)
        XCTAssertEqual(server.requests.count, 1, "--curl sends nothing")
    }

    func testAMissingSocketIsATransportErrorThatNamesIt() throws {
        let missing = try makeSocketFolder().appendingPathComponent("missing.sock").path
        let run = try runOnetCapturing(["request", "--unix-socket", missing, "http://docker.test/echo"])
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.stderr.contains(missing), run.stderr)
    }
}
