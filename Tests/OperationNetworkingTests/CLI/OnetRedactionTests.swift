import Foundation
@_spi(Tool) import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// No `onet` error line shows the password of a URL: transport failures, retries, usage errors and
/// `onet fetch`'s failures show it as `***`, the rest of the URL as it was.
final class OnetRedactionTests: LibraryTestCase {
    private static let secret = "pa55-S3CRET-word"

    private func assertRedacted(_ run: OnetRun, shows expected: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(run.stderr.contains(OnetRedactionTests.secret), run.stderr, file: file, line: line)
        XCTAssertFalse(run.text.contains(OnetRedactionTests.secret), run.text, file: file, line: line)
        XCTAssertTrue(run.stderr.contains(expected), run.stderr, file: file, line: line)
    }

    func testATransportErrorLineRedactsTheURLsPassword() throws {
        let run = try runOnetCapturing(["request", "http://ada:\(OnetRedactionTests.secret)@127.0.0.1:1/x"])
        XCTAssertNotEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stderr.hasPrefix("onet: "), run.stderr)
        assertRedacted(run, shows: "127.0.0.1:1/x")
    }

    func testRetryLinesRedactTheURLsPassword() throws {
        let run = try runOnetCapturing(["request", "--retry", "1", "--verbose",
                                        "http://ada:\(OnetRedactionTests.secret)@127.0.0.1:1/x"])
        XCTAssertNotEqual(run.status, 0, run.stderr)
        assertRedacted(run, shows: "127.0.0.1:1/x")
    }

    func testAUsageErrorRedactsTheURLsPassword() throws {
        let run = try runOnetCapturing(["request", "ftp://ada:\(OnetRedactionTests.secret)@example.com/x"])
        XCTAssertNotEqual(run.status, 0, run.stderr)
        assertRedacted(run, shows: "ftp://ada:***@example.com/x")
        let fetch = try runOnetCapturing(["fetch", "--to", FileManager.default.temporaryDirectory.path,
                                          "ftp://ada:\(OnetRedactionTests.secret)@example.com/x"])
        XCTAssertNotEqual(fetch.status, 0, fetch.stderr)
        assertRedacted(fetch, shows: "ftp://ada:***@example.com/x")
    }

    func testAFetchFailureLineRedactsTheURLsPassword() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-redaction-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try runOnetCapturing(["fetch", "--to", directory.path, "http://ada:\(OnetRedactionTests.secret)@127.0.0.1:1/x"])
        XCTAssertEqual(run.status, 1, run.stderr)
        assertRedacted(run, shows: "onet fetch: failed: http://ada:***@127.0.0.1:1/x")
    }

    /// The rule on its own: the password of every URL in a text, whatever its scheme or form.
    func testRedactingPasswordsInText() throws {
        let cases: [(String, String)] = [
            ("failed: http://ada:s3cret@host:8080/p?q=1 — again", "failed: http://ada:***@host:8080/p?q=1 — again"),
            ("'socks5h://u:p%40ss@127.0.0.1:1080'", "'socks5h://u:***@127.0.0.1:1080'"),
            ("ada:s3cret@example.com/x", "ada:***@example.com/x"),
            ("http://ada:se/cret@host/x", "http://ada:***@host/x"),
            ("http://ada@host/x https://host/@name mail ada@example.com", "http://ada@host/x https://host/@name mail ada@example.com"),
            ("no url here", "no url here"),
        ]
        for (text, expected) in cases {
            XCTAssertEqual(URLRedaction.redactingPasswords(in: text), expected)
        }
        let url = try XCTUnwrap(URL(string: "https://ada:s3cret@example.com:8443/a?b=c"))
        XCTAssertEqual(URLRedaction.redactingPassword(of: url), "https://ada:***@example.com:8443/a?b=c")
        XCTAssertEqual(URLRedaction.redactingPassword(of: try XCTUnwrap(URL(string: "https://example.com/"))), "https://example.com/")
    }
}
