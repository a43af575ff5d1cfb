import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `onet request` end to end: the bytes the test server received, what the command printed, and
/// its exit status. (HTTPieParityTests compares the same words with httpie itself.)
final class OnetRequestTests: ServerTestCase {
    private func url(_ path: String) -> String { server.url(path).absoluteString }

    private func recorded(_ path: String) throws -> RecordedRequest {
        try XCTUnwrap(server.requests(path: path).last, "the server received no request for \(path)")
    }

    // MARK: - Items on the wire

    func testItemsBecomeHTTPiesJSONBodyHeadersAndQueryOnTheWire() throws {
        let run = try runOnetCapturing(["request", "-I", url("/echo"), "name=Ada", "n:=1", "tags:=[\"a\",true]",
                                        "user[langs][]=swift", "X-Trace:abc", "q==1", "q==2", "page==3"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let wire = try recorded("/echo")
        XCTAssertEqual(wire.method, "POST", "a body makes the default method POST")
        XCTAssertEqual(wire.header("Content-Type"), "application/json")
        XCTAssertEqual(wire.header("Accept"), "application/json, */*;q=0.5")
        XCTAssertEqual(wire.header("Accept-Encoding"), "gzip, deflate")
        XCTAssertNil(wire.header("Accept-Language"))
        XCTAssertEqual(wire.header("X-Trace"), "abc")
        XCTAssertEqual(wire.uri, "/echo?q=1&q=2&page=3", "repeated names repeat, in order")
        XCTAssertEqual(String(decoding: wire.body, as: UTF8.self),
                       "{\"name\": \"Ada\", \"n\": 1, \"tags\": [\"a\", true], \"user\": {\"langs\": [\"swift\"]}}")
        // Not a terminal: the body exactly as the server sent it, no colour, no re-indenting.
        let echoed = try XCTUnwrap(JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
        XCTAssertEqual(echoed["method"] as? String, "POST")
        XCTAssertFalse(run.text.contains("\u{1B}["))
    }

    func testStandardInputIsTheBodyAndMakesAPost() throws {
        let run = try runOnet(["request", url("/echo")], input: Data("{\"a\":1}\n".utf8))
        XCTAssertEqual(run.status, 0, run.stderr)
        let wire = try recorded("/echo")
        XCTAssertEqual(wire.method, "POST")
        XCTAssertEqual(wire.body, Data("{\"a\":1}\n".utf8))
        XCTAssertEqual(wire.header("Content-Type"), "application/json")
        server.clearLog()
        XCTAssertEqual(try runOnet(["request", "--ignore-stdin", url("/echo")], input: Data("x".utf8)).status, 0)
        XCTAssertEqual(try recorded("/echo").method, "GET", "--ignore-stdin leaves standard input alone")
    }

    func testFormFieldsRepeatAndAreEncodedAsPythonDoes() throws {
        let run = try runOnetCapturing(["request", "-I", "--form", "PUT", url("/echo"), "user=ada lovelace", "tag=a",
                                        "password=s&cret", "tag=b"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let wire = try recorded("/echo")
        XCTAssertEqual(wire.method, "PUT")
        XCTAssertEqual(wire.header("Content-Type"), "application/x-www-form-urlencoded; charset=utf-8")
        XCTAssertEqual(String(decoding: wire.body, as: UTF8.self), "user=ada+lovelace&tag=a&tag=b&password=s%26cret")
    }

    func testFileItemIsAMultipartPartStreamedWithItsExactBytes() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("onet-upload-\(UUID().uuidString).bin")
        let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try content.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try runOnetCapturing(["request", "-I", "-f", url("/upload"), "doc@\(file.path)", "caption=hello"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let wire = try recorded("/upload")
        XCTAssertEqual(wire.method, "POST")
        XCTAssertTrue(wire.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") ?? false)
        XCTAssertNotNil(wire.body.range(of: content), "the file's bytes must be in the body unchanged")
        let text = String(decoding: wire.body, as: UTF8.self)
        XCTAssertTrue(text.contains("name=\"doc\"; filename=\"\(file.lastPathComponent)\"\r\nContent-Type: application/octet-stream"))
        XCTAssertTrue(text.contains("name=\"caption\"\r\n\r\nhello\r\n"))
        XCTAssertLessThan(text.range(of: "name=\"doc\"")?.lowerBound ?? text.endIndex,
                          text.range(of: "name=\"caption\"")?.lowerBound ?? text.startIndex, "parts in the items' order")
    }

    func testBasicIsSentUpFrontAndDigestAnswersTheChallenge() throws {
        // An API answering 404 without a challenge still gets httpie's credentials.
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "-a", "ada:pw", url("/status/404")]).status, 0)
        XCTAssertEqual(try recorded("/status/404").header("Authorization"), "Basic YWRhOnB3")
        let basic = try runOnetCapturing(["request", "-I", "-a", "ada:pw-basic", url("/auth/basic/ada/pw-basic")])
        XCTAssertEqual(basic.text, "{\"user\":\"ada\"}")
        XCTAssertEqual(server.requests(path: "/auth/basic/ada/pw-basic").count, 1, "no challenge round trip")
        let digest = try runOnetCapturing(["request", "-I", "-A", "digest", "-a", "ada:pw-d", url("/auth/digest/ada/pw-d")])
        XCTAssertEqual(digest.status, 0, digest.stderr)
        XCTAssertEqual(digest.text, "{\"user\":\"ada\"}")
        let rounds = server.requests(path: "/auth/digest/ada/pw-d")
        XCTAssertNil(rounds.first?.header("Authorization"))
        XCTAssertTrue(rounds.last?.header("Authorization")?.hasPrefix("Digest ") ?? false)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "-A", "bearer", "-a", "tok", url("/echo")]).status, 0)
        XCTAssertEqual(try recorded("/echo").header("Authorization"), "Bearer tok")
    }

    func testRedirectsAreShownUnlessFollowed() throws {
        let shown = try runOnetCapturing(["request", "-I", "-h", url("/redirect/2")])
        XCTAssertEqual(shown.status, 0, shown.stderr)
        XCTAssertTrue(shown.text.hasPrefix("HTTP/1.1 302 Found\n"), shown.text)
        XCTAssertEqual(server.requests.count, 1, "not followed by default")
        server.clearLog()
        let followed = try runOnetCapturing(["request", "-I", "-F", url("/redirect/2")])
        XCTAssertEqual(followed.status, 0, followed.stderr)
        XCTAssertEqual(server.requests.map(\.path), ["/redirect/2", "/redirect/1", "/redirect/0"])
        server.clearLog()
        let limited = try runOnetCapturing(["request", "-I", "-F", "--max-redirects=1", url("/redirect/3")])
        XCTAssertEqual(limited.status, 6, limited.stderr)
        XCTAssertTrue(limited.stderr.contains("Too many redirects (--max-redirects=1)"), limited.stderr)
        XCTAssertEqual(server.requests.count, 1)
    }

    // MARK: - Exit statuses

    func testExitStatusesAreHTTPiesWithAndWithoutCheckStatus() throws {
        for (path, checked) in [("/status/204", Int32(0)), ("/redirect/1", 3), ("/status/404", 4), ("/status/503", 5)] {
            let plain = try runOnetCapturing(["request", "-I", url(path)])
            XCTAssertEqual(plain.status, 0, "\(path) without --check-status: \(plain.stderr)")
            let run = try runOnetCapturing(["request", "-I", "--check-status", url(path)])
            XCTAssertEqual(run.status, checked, "\(path): \(run.stderr)")
            if checked != 0 { XCTAssertTrue(run.stderr.hasPrefix("onet: warning: HTTP "), run.stderr) }
        }
        let notFound = try runOnetCapturing(["request", "-I", "--check-status", url("/status/404")])
        XCTAssertFalse(notFound.stdout.isEmpty, "a 4xx body is still printed")
        // A closed port: httpie's 1, one line naming the URL.
        let refused = try runOnetCapturing(["request", "-I", "http://127.0.0.1:1/x"])
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.hasPrefix("onet: error: ") && refused.stderr.contains("127.0.0.1:1/x"), refused.stderr)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--timeout", "0.5", url("/delay/3000")]).status, 2)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", url("/drop/100000")]).status, 1)
    }

    func testRetryOptionSendsTheRequestAgainOnTheWire() throws {
        let key = UUID().uuidString
        let run = try runOnetCapturing(["request", "-I", "--retry", "2", "--verbose", url("/flaky/2/\(key)")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.text.hasSuffix("success 3"), run.text)
        XCTAssertEqual(server.requests(path: "/flaky/2/\(key)").count, 3)
        XCTAssertEqual(run.stderr.components(separatedBy: "* retry: attempt").count - 1, 2, run.stderr)
        let once = UUID().uuidString
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--check-status", url("/flaky/2/\(once)")]).status, 5)
        XCTAssertEqual(server.requests(path: "/flaky/2/\(once)").count, 1, "no --retry, no second request")
    }

    // MARK: - Output

    func testGzipBodiesAreDecodedAsHTTPieDoes() throws {
        let run = try runOnetCapturing(["request", "-I", url("/gzip")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(try recorded("/gzip").header("Accept-Encoding"), "gzip, deflate")
        XCTAssertEqual(run.text, String(repeating: "hello gzip ", count: 1000))
    }

    func testOutputFileGetsTheExactBodyAndStdoutNothing() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("onet-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try runOnetCapturing(["request", "-I", "--output", file.path, url("/bytes/200000")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.isEmpty)
        XCTAssertEqual(try Data(contentsOf: file), deterministicBytes(200_000))
        // A missing folder: one line naming the file (no CoreFoundation noise), nothing sent.
        server.clearLog()
        let unwritable = try runOnetCapturing(["request", "-I", "--output", "/nonexistent-dir/x", url("/bytes/10")])
        XCTAssertEqual(unwritable.status, 1, unwritable.stderr)
        XCTAssertEqual(unwritable.stderr, "onet: error: cannot write '/nonexistent-dir/x': No such file or directory\n")
        XCTAssertTrue(server.requests.isEmpty)
    }

    /// A standard output that refuses the body (a full disk) is a reported local failure, not a crash.
    func testABodyStandardOutputRefusesExitsOneWithAMessage() throws {
        guard let full = FileHandle(forWritingAtPath: "/dev/full") else { throw XCTSkip("/dev/full is missing") }
        defer { try? full.close() }
        let run = try runOnet(["request", "-I", "--pretty=format", url("/bytes/5000")], standardOutput: full)
        XCTAssertEqual(run.status, 1, run.description)
        XCTAssertTrue(run.stderr.contains("onet: error: the body could not be written"), run.description)
    }

    func testCurlPrintsTheCommandAndSendsNothing() throws {
        let run = try runOnetCapturing(["request", "-I", "--curl", "--auth", "ada:pw", "PATCH", url("/echo"), "name=x"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.text.hasPrefix("curl "), run.text)
        XCTAssertTrue(run.text.contains("'PATCH'"), run.text)
        XCTAssertTrue(run.text.contains("{\"name\": \"x\"}"), run.text)
        XCTAssertFalse(run.text.contains("YWRhOnB3"), "the credentials are redacted")
        XCTAssertTrue(server.requests.isEmpty, "--curl sends nothing")
    }

    func testJSONIsIndentedAndColouredOnATerminal() throws {
        let (status, screen) = try runOnetInTerminal(["request", url("/echo"), "q==1"])
        XCTAssertEqual(status, 0, screen)
        XCTAssertTrue(screen.contains("HTTP/1.1 200 OK"), "the head shows on a terminal: \(screen.debugDescription)")
        XCTAssertTrue(screen.contains("{\r\n    \u{1B}[34m\""), "keys indented and blue: \(screen.debugDescription)")
        XCTAssertTrue(screen.contains("\u{1B}[32m\"GET\"\u{1B}[0m"), "strings green: \(screen.debugDescription)")
    }

    // MARK: - Usage errors

    func testUsageErrorsAreOneLineOnStderrNamingTheArgument() throws {
        let cases: [([String], String)] = [
            (["request", "-I", "ht tp://x"], "ht tp://x"),
            (["request", "-I", url("/echo"), "justaword"], "justaword"),
            (["request", "-I", url("/echo"), "n:=not json"], "n:=not json"),
            (["request", "-I", "-f", url("/echo"), "f@/nonexistent/file"], "/nonexistent/file"),
            (["request", "-I", url("/echo"), "a=1", "a[b]=2"], "a[b]"),
            (["request", "-I", "--timeout", "0", url("/echo")], "--timeout"),
            (["request", "-I", "--retry", "-1", url("/echo")], "--retry"),
            (["request", "-I", "--form", url("/echo"), "n:=[1]"], "--form"),
            (["request", "-I", "--frobnicate", url("/echo")], "--frobnicate"),
        ]
        for (arguments, named) in cases {
            let run = try runOnetCapturing(arguments)
            XCTAssertEqual(run.status, 1, "\(arguments): \(run.stderr)")
            let lines = run.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "\(arguments): \(run.stderr)")
            XCTAssertTrue(run.stderr.hasPrefix("onet: ") && run.stderr.contains(named), "\(arguments): \(run.stderr)")
            XCTAssertFalse(run.stderr.contains("Missing value"), "a bad number is refused as such: \(run.stderr)")
        }
        XCTAssertTrue(server.requests.isEmpty, "a usage error sends nothing")
    }
}
