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
        XCTAssertEqual(failing.stderr, "onet: bench: 5 of 5 failed: HTTP 500 Internal Server Error — \(server.url("/status/500"))\n")
    }

    /// bench/cache's runs: through `--cache-dir`, a fresh response is fetched once and then answered
    /// from the cache; the cache needs bodies in memory.
    func testACacheRunAnswersFromTheCacheAfterTheFirstRequest() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-bench-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = server.url("/cache/bench?cc=max-age=600").absoluteString
        let run = try runOnetCapturing(["bench", "--url", url, "--requests", "50", "--sink", "memory",
                                        "--cache-dir", directory.path])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try result(run)["errors"], "0")
        XCTAssertEqual(server.requests(path: "/cache/bench").count, 1, "49 answered by the cache")
        let streamed = try runOnetCapturing(["bench", "--url", url, "--requests", "5", "--cache-dir", directory.path])
        XCTAssertEqual(streamed.status, 64, streamed.description)
        XCTAssertTrue(streamed.stderr.contains("need --sink memory"), streamed.description)
    }

    /// `errors=N` comes with its reason: one line per distinct cause, naming the URL, however long each
    /// refused connection took (curl's message tells, in milliseconds that vary from one to the next).
    func testARefusedPortIsReportedWithItsReason() throws {
        let run = try runOnetCapturing(["bench", "--url", "http://127.0.0.1:1/x", "--requests", "100", "--concurrency", "4"])
        XCTAssertEqual(run.status, 1)
        XCTAssertEqual(try result(run)["errors"], "100")
        let lines = run.stderr.split(separator: "\n")
        XCTAssertEqual(lines.count, 1, run.stderr)
        XCTAssertTrue(run.stderr.hasPrefix("onet: bench: 100 of 100 failed: ") && run.stderr.contains("http://127.0.0.1:1/x")
                      && run.stderr.lowercased().contains("connect") && !run.stderr.contains(" ms"), run.stderr)
    }

    /// A method the harness does not run is UNSUPPORTED (its convention: last line, status 3), named on
    /// standard error; a count that makes no sense is a usage error naming the option.
    func testUnsupportedMethodsAndBadNumbersAreOneLineNamingThem() throws {
        let put = try runOnetCapturing(["bench", "--url", server.url("/echo").absoluteString, "--method", "PUT"])
        XCTAssertEqual(put.status, 3)
        XCTAssertTrue(put.text.split(separator: "\n").last?.hasPrefix("UNSUPPORTED") ?? false, put.text)
        XCTAssertEqual(put.stderr, "onet: bench: --method PUT is not supported (GET or POST)\n")
        XCTAssertTrue(server.requests.isEmpty)
        for (arguments, named) in [(["--requests", "-5"], "--requests"), (["--concurrency", "0"], "--concurrency"),
                                   (["--body-size", "-1"], "--body-size")] {
            let run = try runOnetCapturing(["bench", "--url", server.url("/echo").absoluteString] + arguments)
            XCTAssertEqual(run.status, 64, "\(arguments)")
            XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, run.stderr)
            XCTAssertTrue(run.stderr.contains(named) && !run.stderr.contains("Missing value"), run.stderr)
        }
    }
}
