import Foundation
import OperationNetworkingTestServer
import XCTest

/// `onet request`'s state between runs: `--session` files (one per host, as httpie keeps them, the
/// cookies going through the library's cookie storage), no cookie kept without one, and `--download`
/// with `--continue`.
final class OnetRequestStateTests: OnetHomeTestCase {

    private func onet(_ arguments: [String]) throws -> OnetRun {
        try runOnet(["request", "-I"] + arguments, input: Data(), environment: ["HOME": home.path, "XDG_CONFIG_HOME": ""],
                    directory: home)
    }

    // MARK: - Sessions

    func testASessionIsAFilePerHostKeepingHeadersCredentialsAndCookies() throws {
        let first = try onet(["--session=work", "-a", "ada:pw", url("/cookies/set?token=abc"), "X-Team:core"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let file = home.appendingPathComponent(".config/onet/sessions/127.0.0.1_\(server.port)/work.json")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600, "it holds a password: owner only")
        let stored = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        XCTAssertEqual((stored["auth"] as? [String: String])?["raw_auth"], "ada:pw")
        XCTAssertEqual((stored["headers"] as? [[String: String]])?.first?["name"], "X-Team")
        XCTAssertEqual((stored["cookies"] as? [[String: Any]])?.first?["name"] as? String, "token")
        server.clearLog()
        XCTAssertEqual(try onet(["--session=work", url("/echo")]).status, 0)
        let again = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(again.header("Cookie"), "token=abc")
        XCTAssertEqual(again.header("Authorization"), "Basic YWRhOnB3")
        XCTAssertEqual(again.header("X-Team"), "core")
        // Another host (the same server under another name) has a session of its own.
        server.clearLog()
        XCTAssertEqual(try onet(["--session=work", "http://localhost:\(server.port)/echo"]).status, 0)
        XCTAssertNil(server.requests.last?.header("Cookie"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: home.appendingPathComponent(
            ".config/onet/sessions/localhost_\(server.port)/work.json").path))
    }

    func testAReadOnlySessionIsUsedButNotChanged() throws {
        XCTAssertEqual(try onet(["--session=s", url("/echo"), "X-A:1"]).status, 0)
        let file = home.appendingPathComponent(".config/onet/sessions/127.0.0.1_\(server.port)/s.json")
        let before = try Data(contentsOf: file)
        server.clearLog()
        XCTAssertEqual(try onet(["--session-read-only=s", url("/cookies/set?late=1"), "X-A:2"]).status, 0)
        XCTAssertEqual(server.requests.last?.header("X-A"), "2")
        XCTAssertEqual(try Data(contentsOf: file), before)
    }

    /// Without `--session` nothing is kept: a cookie with an expiry (which corelibs' storage writes to
    /// `~/.local/share/<program>/.cookies.shared` and reads back in the next process) is neither sent
    /// by the next run nor left in the storage's file.
    func testWithoutASessionNoCookieOutlivesTheRun() throws {
        let expiring = "kept=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/"
        let set = try onet([url("/cookies/raw?set=\(expiring.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")])
        XCTAssertEqual(set.status, 0, set.stderr)
        XCTAssertEqual(server.requests.last?.uri.contains("Expires"), true)
        server.clearLog()
        XCTAssertEqual(try onet([url("/echo")]).status, 0)
        XCTAssertNil(try XCTUnwrap(server.requests.last).header("Cookie"), "the next run sends no cookie")
        let share = home.appendingPathComponent(".local/share")
        for case let file as URL in FileManager.default.enumerator(at: share, includingPropertiesForKeys: nil)?.allObjects ?? []
        where file.lastPathComponent == ".cookies.shared" {
            XCTAssertNil(try Data(contentsOf: file).range(of: Data("kept".utf8)), "the cookie is left in \(file.path)")
        }
    }

    // MARK: - Downloads

    func testDownloadSavesTheExactBodyAndContinueAppendsWithARange() throws {
        let run = try onet(["-d", "-o", "whole.bin", url("/bytes/300000")])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.stdout.isEmpty)
        XCTAssertTrue(run.stderr.contains("Done."), run.stderr)
        XCTAssertEqual(try Data(contentsOf: home.appendingPathComponent("whole.bin")), deterministicBytes(300_000))
        XCTAssertEqual(server.requests.last?.header("Accept-Encoding"), "identity")
        // A partial file continues from where it ends.
        let partial = home.appendingPathComponent("part.bin")
        try deterministicBytes(120_000).write(to: partial)
        server.clearLog()
        let resumed = try onet(["-d", "-c", "-o", "part.bin", url("/bytes/300000")])
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertEqual(server.requests.last?.header("Range"), "bytes=120000-")
        XCTAssertEqual(try Data(contentsOf: partial), deterministicBytes(300_000))
        // A server that sends everything again (200): the file starts over, never duplicated.
        try deterministicBytes(120_000).write(to: partial)
        XCTAssertEqual(try onet(["-d", "-c", "-o", "part.bin", url("/bytes/300000?ignoreRange=1")]).status, 0)
        XCTAssertEqual(try Data(contentsOf: partial), deterministicBytes(300_000))
    }

    func testDownloadErrorsExitAsHTTPieDoesAndKeepNoErrorPage() throws {
        let missing = try onet(["-d", "-o", "x.bin", url("/status/404")])
        XCTAssertEqual(missing.status, 4, missing.stderr)
        XCTAssertEqual(FileManager.default.contents(atPath: home.appendingPathComponent("x.bin").path), Data())
        let cut = try onet(["-d", "-o", "y.bin", url("/drop/100000")])
        XCTAssertEqual(cut.status, 1)
        XCTAssertTrue(cut.stderr.contains("Incomplete download"), cut.stderr)
        let folder = try onet(["-d", "-o", "no/such/folder/z.bin", url("/bytes/10")])
        XCTAssertEqual(folder.status, 1)
        XCTAssertEqual(folder.stderr.split(separator: "\n").count, 1, folder.stderr)
        XCTAssertTrue(folder.stderr.contains("no/such/folder/z.bin"), folder.stderr)
    }

    func testDownloadShowsAProgressBarOnATerminal() throws {
        let file = home.appendingPathComponent("slow.bin")
        let (status, screen) = try runOnetInTerminal(["request", "-d", "-o", file.path,
                                                      url("/chunked/400000?chunkSize=20000&chunkDelayMs=40")])
        XCTAssertEqual(status, 0, screen)
        XCTAssertTrue(screen.contains("slow.bin") && screen.contains("["), "a bar is drawn: \(screen.debugDescription)")
        XCTAssertTrue(screen.contains("Done."), screen)
        XCTAssertEqual(try Data(contentsOf: file), deterministicBytes(400_000))
    }
}
