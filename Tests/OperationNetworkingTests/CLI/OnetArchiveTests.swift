import Foundation
import OperationNetworkingTestServer
import XCTest

/// `onet archive` with what onet itself writes: a manager saved from options, `onet fetch`'s state
/// file; sorted, readable output; one line and a non-zero status for every failure.
final class OnetArchiveTests: TemporaryDirectoryTestCase {
    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func testAManagerSavedFromOptionsIsRestoredShownSortedAndWorks() throws {
        let saved = try runOnetCapturing(["archive", "save", path("api.archive"), "--base-url", server.baseURL.absoluteString + "/",
                                          "--json", "--header", "X-Team:core", "--header", "Authorization:Bearer tok",
                                          "--timeout", "12", "--retry", "2", "--no-credential-storage"])
        XCTAssertEqual(saved.status, 0, saved.stderr)
        let json = try runOnetCapturing(["archive", "inspect-manager", path("api.archive"), "--path", "echo", "--json"])
        XCTAssertEqual(json.status, 0, json.stderr)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        XCTAssertEqual(report["requestSerializer"] as? String, "JSONRequestSerializer")
        XCTAssertEqual((report["headers"] as? [String: String])?["X-Team"], "core")
        XCTAssertEqual(report["timeoutInterval"] as? Double, 12)
        XCTAssertEqual(report["retryAttempts"] as? Int, 3)
        XCTAssertEqual(report["shouldUseCredentialStorage"] as? Bool, false)
        XCTAssertEqual(report["status"] as? Int, 200)
        XCTAssertEqual(server.requests.last?.header("X-Team"), "core", "the restored manager sends its headers")
        let keys = json.text.components(separatedBy: "\":").compactMap { $0.components(separatedBy: "\"").last }
        XCTAssertEqual(keys.filter { report[$0] != nil }, keys.filter { report[$0] != nil }.sorted(), "sorted keys")
        // On a terminal: one readable line a setting, sorted, the secret hidden.
        let (status, screen) = try runOnetInTerminal(["archive", "inspect-manager", path("api.archive")])
        XCTAssertEqual(status, 0, screen)
        let lines = screen.components(separatedBy: "\r\n").filter { $0.contains(": ") }
        XCTAssertEqual(lines, lines.sorted(), screen)
        XCTAssertTrue(lines.contains("headers: Authorization=Bearer ***, X-Team=core"), screen)
        XCTAssertFalse(screen.contains("tok"), screen)
    }

    func testFetchsStateFileIsResumedByArchiveAndRecordedDone() throws {
        let target = directory.appendingPathComponent("out")
        let url = server.url("/bytes/1000000?chunkSize=10000&chunkDelayMs=20")
        let file = target.appendingPathComponent("1000000")
        try interruptFetch(of: url, into: target, file: file)
        let state = target.appendingPathComponent(".onet-fetch-state")
        let before = try XCTUnwrap(try stateEntries(state).first)
        XCTAssertEqual(before["status"] as? String, "paused")
        let bytes = try XCTUnwrap(before["bytes"] as? Int)

        let run = try runOnetCapturing(["archive", "resume-download", state.path])
        XCTAssertEqual(run.status, 0, run.description)
        XCTAssertTrue(run.text.contains("status=206"), run.text)
        XCTAssertEqual(server.requests(path: "/bytes/1000000").last?.header("Range"), "bytes=\(bytes)-")
        XCTAssertEqual(try Data(contentsOf: file), deterministicBytes(1_000_000))
        XCTAssertEqual(try stateEntries(state).first?["status"] as? String, "done", "onet fetch will not fetch it again")
    }

    func testAResumeThatFailsExitsNonZeroAndKeepsWhatWasSaved() throws {
        let target = directory.appendingPathComponent("out")
        let other = try TestServer()
        let url = other.url("/bytes/1000000?chunkSize=10000&chunkDelayMs=20")
        let file = target.appendingPathComponent("1000000")
        try interruptFetch(of: url, into: target, file: file)
        let state = target.appendingPathComponent(".onet-fetch-state")
        let bytes = try XCTUnwrap(try stateEntries(state).first?["bytes"] as? Int)
        other.shutdown()   // nothing listens on its port any more
        let run = try runOnetCapturing(["archive", "resume-download", state.path])
        XCTAssertEqual(run.status, 1, run.description)
        XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, run.stderr)
        XCTAssertTrue(run.stderr.hasPrefix("onet: archive: ") && run.stderr.contains(url.absoluteString), run.stderr)
        XCTAssertEqual(try Data(contentsOf: file).count, bytes, "the saved prefix is kept")
        XCTAssertEqual(try stateEntries(state).first?["status"] as? String, "paused", "still continuable")
    }

    func testEveryErrorIsOneLineNamingTheFile() throws {
        try Data("not an archive".utf8).write(to: URL(fileURLWithPath: path("junk")))
        let cases: [([String], String)] = [
            (["archive", "inspect-manager", path("missing.archive")], "missing.archive"),
            (["archive", "inspect-manager", path("junk")], "junk"),
            (["archive", "resume-download", path("junk"), "--output", path("x")], "junk"),
            (["archive", "save", path("no/such/folder/a.archive")], "no/such/folder/a.archive"),
        ]
        for (arguments, named) in cases {
            let run = try runOnetCapturing(arguments)
            XCTAssertEqual(run.status, 1, "\(arguments): \(run.stderr)")
            XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, "\(arguments): \(run.stderr)")
            XCTAssertTrue(run.stderr.hasPrefix("onet: archive: ") && run.stderr.contains(named), "\(arguments): \(run.stderr)")
        }
    }

    // MARK: - Helpers

    private func stateEntries(_ state: URL) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: state)) as? [String: Any]
        return try XCTUnwrap(object?["files"] as? [[String: Any]])
    }
}
