import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `onet request` end to end: the bytes the test server received, what the command printed, and
/// its exit status.
final class OnetRequestTests: ServerTestCase {
    private func url(_ path: String) -> String { server.url(path).absoluteString }

    private func recorded(_ path: String) throws -> RecordedRequest {
        try XCTUnwrap(server.requests(path: path).last, "the server received no request for \(path)")
    }

    // MARK: - Items on the wire

    func testItemsBecomeJSONBodyHeadersAndQueryOnTheWire() throws {
        let run = try runOnetCapturing(["request", url("/echo"), "name=Ada", "n:=1", "tags:=[\"a\",true]",
                                        "X-Trace:abc", "q==1", "q==2", "page==3"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let wire = try recorded("/echo")
        XCTAssertEqual(wire.method, "POST", "a body makes the default method POST")
        XCTAssertEqual(wire.header("Content-Type"), "application/json")
        XCTAssertEqual(wire.header("X-Trace"), "abc")
        XCTAssertEqual(wire.query["page"], "3")
        XCTAssertTrue(wire.uri.contains("q%5B%5D=1&q%5B%5D=2"), wire.uri)
        let body = try XCTUnwrap(JSONSerialization.jsonObject(with: wire.body) as? [String: Any])
        XCTAssertEqual(body["name"] as? String, "Ada")
        XCTAssertEqual(body["n"] as? Int, 1)
        XCTAssertEqual((body["tags"] as? [Any])?.count, 2)
        // Not a terminal: the body exactly as the server sent it, no colour, no re-indenting.
        let echoed = try XCTUnwrap(JSONSerialization.jsonObject(with: run.stdout) as? [String: Any])
        XCTAssertEqual(echoed["method"] as? String, "POST")
        XCTAssertFalse(run.text.contains("\u{1B}["))
        XCTAssertFalse(run.text.contains("\n    "), "piped output must be the raw body")
    }

    func testExplicitMethodAndFormFields() throws {
        let run = try runOnetCapturing(["request", "--form", "PUT", url("/echo"), "user=ada lovelace", "password=s&cret"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let wire = try recorded("/echo")
        XCTAssertEqual(wire.method, "PUT")
        XCTAssertEqual(wire.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(String(decoding: wire.body, as: UTF8.self), "password=s%26cret&user=ada%20lovelace")
    }

    func testFileItemIsAMultipartPartStreamedWithItsExactBytes() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("onet-upload-\(UUID().uuidString).bin")
        let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        try content.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try runOnetCapturing(["request", url("/upload"), "doc@\(file.path)", "caption=hello"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let wire = try recorded("/upload")
        XCTAssertEqual(wire.method, "POST")
        XCTAssertTrue(wire.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") ?? false)
        XCTAssertNotNil(wire.body.range(of: content), "the file's bytes must be in the body unchanged")
        let text = String(decoding: wire.body, as: UTF8.self)
        XCTAssertTrue(text.contains("name=\"doc\"; filename=\"\(file.lastPathComponent)\""))
        XCTAssertTrue(text.contains("name=\"caption\"\r\n\r\nhello\r\n"))
    }

    func testDigestAndBasicAuthAnswerTheServersChallenge() throws {
        for scheme in ["digest", "basic"] {
            server.clearLog()
            let path = "/auth/\(scheme)/ada/pw-\(scheme)"
            let run = try runOnetCapturing(["request", "--auth", "ada:pw-\(scheme)", url(path)])
            XCTAssertEqual(run.status, 0, "\(scheme): \(run.stderr)")
            XCTAssertEqual(run.text, "{\"user\":\"ada\"}")
            let requests = server.requests(path: path)
            // A challenge, then the answer (libcurl's Digest may probe once more before answering).
            XCTAssertGreaterThanOrEqual(requests.count, 2, scheme)
            XCTAssertNil(requests.first?.header("Authorization"))
            XCTAssertTrue(requests.last?.header("Authorization")?.lowercased().hasPrefix(scheme) ?? false)
        }
        let wrong = try runOnetCapturing(["request", "--auth", "ada:wrong", url("/auth/basic/ada/right")])
        XCTAssertEqual(wrong.status, 4)
    }

    // MARK: - Exit statuses

    func testExitStatusesTellTransportErrors4xxAnd5xxApart() throws {
        XCTAssertEqual(try runOnetCapturing(["request", url("/status/204")]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", url("/status/304")]).status, 3)
        let notFound = try runOnetCapturing(["request", url("/status/404")])
        XCTAssertEqual(notFound.status, 4)
        XCTAssertFalse(notFound.stdout.isEmpty, "a 4xx body is still printed")
        XCTAssertEqual(try runOnetCapturing(["request", url("/status/503")]).status, 5)
        // A closed port: no response at all.
        let refused = try runOnetCapturing(["request", "http://127.0.0.1:1/x"])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.hasPrefix("onet: "), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("127.0.0.1:1/x"), refused.stderr)
        // A server that drops the connection mid-body.
        XCTAssertEqual(try runOnetCapturing(["request", url("/drop/100000")]).status, 2)
    }

    func testRetryOptionSendsTheRequestAgainOnTheWire() throws {
        let key = UUID().uuidString
        let run = try runOnetCapturing(["request", "--retry", "2", "--verbose", url("/flaky/2/\(key)")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(run.text, "success 3")
        XCTAssertEqual(server.requests(path: "/flaky/2/\(key)").count, 3)
        XCTAssertEqual(run.stderr.components(separatedBy: "* retry: attempt").count - 1, 2, run.stderr)
        let once = UUID().uuidString
        XCTAssertEqual(try runOnetCapturing(["request", url("/flaky/2/\(once)")]).status, 5)
        XCTAssertEqual(server.requests(path: "/flaky/2/\(once)").count, 1, "no --retry, no second request")
    }

    // MARK: - Output

    func testOutputFileGetsTheExactBodyAndStdoutNothing() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("onet-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try runOnetCapturing(["request", "--output", file.path, url("/bytes/200000")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.isEmpty)
        let written = try Data(contentsOf: file)
        XCTAssertEqual(written, deterministicBytes(200_000))
        let unwritable = try runOnetCapturing(["request", "--output", "/nonexistent-dir/x", url("/bytes/10")])
        XCTAssertEqual(unwritable.status, 1, unwritable.stderr)
    }

    /// A standard output that refuses the body (a full disk) is a reported local failure, not a crash.
    func testABodyStandardOutputRefusesExitsOneWithAMessage() throws {
        guard let full = FileHandle(forWritingAtPath: "/dev/full") else { throw XCTSkip("/dev/full is missing") }
        defer { try? full.close() }
        let run = try runOnet(["request", url("/bytes/5000")], standardOutput: full)
        XCTAssertEqual(run.status, 1, run.description)
        XCTAssertTrue(run.stderr.contains("onet: the body could not be written to standard output"), run.description)
    }

    func testVerboseShowsBothHeadsAndMetricsWithSecretsRedacted() throws {
        let run = try runOnetCapturing(["request", "-v", url("/echo"), "Authorization:Bearer top-secret",
                                        "Cookie:session=also-secret", "X-Visible:yes"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let lines = run.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "> GET /echo HTTP/1.1")
        XCTAssertTrue(lines.contains("> Authorization: ***"), run.stderr)
        XCTAssertTrue(lines.contains("> Cookie: ***"), run.stderr)
        XCTAssertTrue(lines.contains("> X-Visible: yes"), run.stderr)
        XCTAssertFalse(run.stderr.contains("top-secret") || run.stderr.contains("also-secret"))
        XCTAssertTrue(lines.contains("< HTTP/1.1 200 OK"), run.stderr)
        XCTAssertTrue(lines.contains { $0.hasPrefix("< Content-Type: application/json") }, run.stderr)
        XCTAssertTrue(lines.contains { $0.hasPrefix("* 127.0.0.1") && $0.contains("total") && $0.contains("attempts 1") },
                      run.stderr)
        // Redacted on the screen only: the server got the real values.
        XCTAssertEqual(try recorded("/echo").header("Authorization"), "Bearer top-secret")
    }

    func testCurlPrintsTheCommandAndSendsNothing() throws {
        let run = try runOnetCapturing(["request", "--curl", "--auth", "ada:pw", "PATCH", url("/echo"), "name=x"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.text.hasPrefix("curl "), run.text)
        XCTAssertTrue(run.text.contains("'PATCH'"), run.text)
        XCTAssertTrue(run.text.contains("{\"name\":\"x\"}"), run.text)
        XCTAssertFalse(run.text.contains("ada:pw"), "the password is redacted")
        XCTAssertTrue(server.requests.isEmpty, "--curl sends nothing")
    }

    func testJSONIsIndentedAndColouredOnATerminal() throws {
        let (status, screen) = try runOnetInTerminal(["request", url("/echo"), "q==1"])
        XCTAssertEqual(status, 0, screen)
        XCTAssertTrue(screen.contains("{\r\n    \u{1B}[34m\""), "keys indented and blue: \(screen.debugDescription)")
        XCTAssertTrue(screen.contains("\u{1B}[32m\"GET\"\u{1B}[0m"), "strings green: \(screen.debugDescription)")
    }

    // MARK: - TLS

    func testCACertPinningAndInsecureOptionsApplyTheSecurityPolicy() throws {
        let authority = try TestCertificateAuthority(commonName: "onet request CA")
        let identity = try authority.issue()
        let tlsServer = try TestServer(tls: identity)
        defer { tlsServer.shutdown() }
        let target = "https://127.0.0.1:\(tlsServer.port)/echo"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caPEM = directory.appendingPathComponent("ca.pem")
        try Data(CertificateData.pem([authority.certificate]).utf8).write(to: caPEM)
        let leafDER = directory.appendingPathComponent("leaf.der")
        try identity.certificate.write(to: leafDER)
        let stranger = directory.appendingPathComponent("stranger.pem")
        try Data(CertificateData.pem([try TestCertificateAuthority(commonName: "Stranger").certificate]).utf8).write(to: stranger)

        let untrusted = try runOnetCapturing(["request", target])
        XCTAssertEqual(untrusted.status, 2, "an unknown CA is refused")
        XCTAssertEqual(try runOnetCapturing(["request", "--cacert", caPEM.path, target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "--insecure", target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "--cacert", caPEM.path, "--pin-cert", leafDER.path, target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "--cacert", caPEM.path, "--pin-key", leafDER.path, target]).status, 0)
        let wrongPin = try runOnetCapturing(["request", "--insecure", "--pin-cert", stranger.path, target])
        XCTAssertEqual(wrongPin.status, 2, "--insecure never turns a pin off")
        XCTAssertEqual(tlsServer.requests.count, 4, "refused servers never receive the request")
    }

    // MARK: - Usage errors

    func testUsageErrorsAreOneLineOnStderrNamingTheArgument() throws {
        let cases: [([String], String)] = [
            (["request", "ht tp://x"], "ht tp://x"),
            (["request", url("/echo"), "justaword"], "justaword"),
            (["request", url("/echo"), "n:=not json"], "n:=not json"),
            (["request", url("/echo"), "f@/nonexistent/file"], "/nonexistent/file"),
            (["request", "--pin-cert", "/nonexistent.pem", url("/echo")], "--pin-cert"),
            (["request", "--timeout", "0", url("/echo")], "--timeout"),
            (["request", "--form", url("/echo"), "n:=1"], "--form"),
        ]
        for (arguments, named) in cases {
            let run = try runOnetCapturing(arguments)
            XCTAssertEqual(run.status, 64, "\(arguments): \(run.stderr)")
            let lines = run.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 1, "\(arguments): \(run.stderr)")
            XCTAssertTrue(run.stderr.hasPrefix("onet: ") && run.stderr.contains(named), "\(arguments): \(run.stderr)")
        }
        XCTAssertTrue(server.requests.isEmpty, "a usage error sends nothing")
    }
}
