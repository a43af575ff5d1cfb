import Foundation
import XCTest

/// `onet bench`, the harness's client: N requests, at most C in flight, the RESULT line last.
final class OnetBenchTests: ServerTestCase {
    /// The `key=value` fields of the RESULT line, which must be the last line of standard output.
    private func result(_ run: OnetRun) throws -> [String: String] {
        let last = try XCTUnwrap(run.text.split(separator: "\n").last.map(String.init))
        XCTAssertTrue(last.hasPrefix("RESULT requests="), last)
        var fields: [String: String] = [:]
        for pair in last.split(separator: " ").dropFirst() {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    func testGetRunSendsEveryRequestAndCountsEveryBodyByte() throws {
        let run = try runOnetCapturing(["bench", "--url", server.url("/bytes/1024").absoluteString,
                                        "--requests", "300", "--concurrency", "8"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let fields = try result(run)
        XCTAssertEqual(fields["requests"], "300")
        XCTAssertEqual(fields["errors"], "0")
        XCTAssertEqual(fields["bytes"], "\(300 * 1024)")
        XCTAssertEqual(server.requests(path: "/bytes/1024").count, 300)
        XCTAssertLessThanOrEqual(server.acceptedConnections, 8, "at most C in flight")
    }

    func testPostRunSendsTheBodyAndCountsErrors() throws {
        let post = try runOnetCapturing(["bench", "--url", server.url("/upload").absoluteString, "--requests", "20",
                                         "--concurrency", "4", "--method", "POST", "--body-size", "5000", "--sink", "memory"])
        XCTAssertEqual(post.status, 0, post.stderr)
        XCTAssertEqual(try result(post)["errors"], "0")
        let uploads = server.requests(path: "/upload")
        XCTAssertEqual(uploads.count, 20)
        XCTAssertTrue(uploads.allSatisfy { $0.method == "POST" && $0.body == Data(repeating: 0x61, count: 5000) })
        let failing = try runOnetCapturing(["bench", "--url", server.url("/status/500").absoluteString, "--requests", "5"])
        XCTAssertEqual(failing.status, 1)
        XCTAssertEqual(try result(failing)["errors"], "5")
    }
}
