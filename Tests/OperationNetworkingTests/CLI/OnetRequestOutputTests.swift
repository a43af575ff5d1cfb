import Foundation
import OperationNetworkingTestServer
import XCTest

/// Issue 46, "what it prints is what was sent": every request head `onet request -v` shows is the head
/// the server received — each redirect hop, each authentication round, the stored cookies, the
/// transport's own fields — and its timings never count a retry's backoff as a connection phase.
final class OnetRequestOutputTests: OnetHomeTestCase {

    private func onet(_ arguments: [String]) throws -> OnetRun {
        try runOnet(["request", "-I"] + arguments, input: Data(), environment: ["HOME": home.path, "XDG_CONFIG_HOME": ""])
    }

    /// The request heads in `output`: each request line and its fields (lower-cased names).
    private func shownRequests(_ output: String) -> [(line: String, fields: [String])] {
        var result: [(String, [String])] = []
        var current: (String, [String])?
        for line in output.components(separatedBy: "\n") {
            if var open = current {
                if line.isEmpty {
                    result.append(open)
                    current = nil
                } else if let colon = line.firstIndex(of: ":") {
                    open.1.append(line[..<colon].lowercased() + line[colon...])
                    current = open
                }
            } else if line.range(of: #"^[A-Z]+ \S+ HTTP/1\.1$"#, options: .regularExpression) != nil {
                current = (line, [])
            }
        }
        return result
    }

    private func wireFields(_ record: RecordedRequest) -> [String] {
        record.headers.map { "\($0.name.lowercased()): \($0.value)" }.sorted()
    }

    func testVerboseShowsEveryHeaderSentOnEveryRedirectHopStoredCookiesIncluded() throws {
        XCTAssertEqual(try onet(["--session=s", url("/cookies/set?flavour=oat")]).status, 0)
        server.clearLog()
        let run = try onet(["-v", "--show-secrets", "--session=s", "-F", "POST", url("/redirect/2"), "a=1", "X-Trace:t"])
        XCTAssertEqual(run.status, 0, run.stderr)
        let shown = shownRequests(run.text)
        let sent = server.requests
        XCTAssertEqual(shown.map(\.line), ["POST /redirect/2 HTTP/1.1", "GET /redirect/1 HTTP/1.1", "GET /redirect/0 HTTP/1.1"])
        XCTAssertEqual(shown.count, sent.count, run.text)
        for (printed, record) in zip(shown, sent) {
            XCTAssertEqual(printed.fields.sorted(), wireFields(record), "\(printed.line) as shown vs as received")
            XCTAssertEqual(record.header("Cookie"), "flavour=oat")
        }
        // Secrets are hidden unless asked: the cookie's name shows, its value does not.
        server.clearLog()
        let hidden = try onet(["-v", "--session=s", "-a", "ada:pw", url("/echo")])
        XCTAssertTrue(hidden.text.contains("\nCookie: flavour=***\n") && hidden.text.contains("\nAuthorization: Basic ***\n"), hidden.text)
        XCTAssertEqual(try XCTUnwrap(server.requests.last).header("Authorization"), "Basic YWRhOnB3")
    }

    func testVerboseShowsEachAuthenticationRoundTheLibraryMade() throws {
        let run = try onet(["-v", "--show-secrets", "-A", "digest", "-a", "ada:pw", url("/auth/digest/ada/pw")])
        XCTAssertEqual(run.status, 0, run.stderr)
        let shown = shownRequests(run.text)
        let sent = server.requests
        XCTAssertEqual(shown.count, sent.count, "every round is shown:\n\(run.text)")
        for (printed, record) in zip(shown, sent) {
            let withoutAuthorization = { (fields: [String]) in fields.filter { !$0.hasPrefix("authorization:") }.sorted() }
            XCTAssertEqual(withoutAuthorization(printed.fields), withoutAuthorization(wireFields(record)))
            XCTAssertEqual(printed.fields.contains { $0.hasPrefix("authorization: Digest") }, record.header("Authorization") != nil)
        }
        XCTAssertTrue(run.text.contains("HTTP/1.1 401 Unauthorized"), "the challenge is shown: \(run.text)")
    }

    func testTheRequestBodyAndTransportFieldsShownAreTheOnesSent() throws {
        let file = home.appendingPathComponent("note.txt")
        try Data("a note\n".utf8).write(to: file)
        for arguments in [["-v", url("/echo"), "name=ünï", "n:=1"], ["-v", "PUT", url("/echo"), "@\(file.path)"],
                          ["-v", "-f", url("/upload"), "doc@\(file.path)", "x=1"], ["-v", "DELETE", url("/echo")],
                          ["-v", url("/echo"), "Accept:", "X-A:1", "X-A:2"]] {
            server.clearLog()
            let run = try onet(arguments)
            XCTAssertEqual(run.status, 0, run.stderr)
            let record = try XCTUnwrap(server.requests.first)
            let printed = try XCTUnwrap(shownRequests(run.text).first, run.text)
            XCTAssertEqual(printed.fields.sorted(), wireFields(record), "\(arguments)")
            if record.header("Content-Type")?.hasPrefix("multipart/") != true, !record.body.isEmpty {
                XCTAssertTrue(run.stdout.range(of: record.body) != nil, "the body shown is the body sent: \(arguments)")
            }
        }
    }

    func testTimingsNeverCountARetrysBackoffAsDNSOrConnect() throws {
        let key = UUID().uuidString
        let run = try onet(["-vv", "--retry", "1", url("/flaky/1/\(key)?retryAfter=1")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(server.requests.count, 2, "one retry after a one-second Retry-After")
        let line = try XCTUnwrap(run.text.components(separatedBy: "\n").first { $0.hasPrefix("* 127.0.0.1") }, run.text)
        XCTAssertFalse(line.contains("DNS "), "after a retry the lookup cannot be told from the backoff: \(line)")
        func milliseconds(after label: String) -> Double? {
            guard let range = line.range(of: label + " ") else { return nil }
            return Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
        }
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(milliseconds(after: "backoff, redirects and DNS)"), line), 900, line)
        XCTAssertLessThan(try XCTUnwrap(milliseconds(after: "connect"), line), 500, "the backoff is not connect time: \(line)")
        XCTAssertLessThan(try XCTUnwrap(milliseconds(after: "first byte"), line), 500, line)
        XCTAssertTrue(line.hasSuffix("attempts 2"), line)
    }
}
