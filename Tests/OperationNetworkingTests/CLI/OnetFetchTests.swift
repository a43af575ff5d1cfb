import Foundation
import OperationNetworkingTestServer
import XCTest

/// `onet fetch` end to end against the test server: byte-exact files and one request each, failures
/// reported, retries on the wire, and an interactive run in a real pseudo-terminal (tmux) that draws
/// progress bars, is interrupted with Ctrl-C and resumed with Range requests (OnetFetchTests+Terminal.swift).
final class OnetFetchTests: ServerTestCase {
    /// Directories the test made; removed in tearDown.
    private var directories: [URL] = []
    /// The tmux server of the terminal test (its own socket, so no other session is touched).
    var tmuxSession: TmuxSession?

    override func tearDown() {
        _ = try? tmuxSession?.run(["kill-server"])
        tmuxSession = nil
        directories.forEach { try? FileManager.default.removeItem(at: $0) }
        directories = []
        super.tearDown()
    }

    // MARK: - Non-interactive

    /// Several URLs (from a file with a comment and a blank line): byte-exact files, one request each, unique names, plain progress lines, no state file left.
    func testFetchesEveryURLOnceByteExactWithUniqueSafeNames() throws {
        let base = try makeDirectory()
        let target = base.appendingPathComponent("out")
        let urls = [server.url("/bytes/100000"), server.url("/bytes/250000?chunkSize=5000"),
                    server.url("/bytes/100000?etag=second"), server.url("/bytes/0")]
        let list = base.appendingPathComponent("urls.txt")
        try ("# a comment, then a blank line\n\n" + urls.map(\.absoluteString).joined(separator: "\n") + "\n")
            .write(to: list, atomically: true, encoding: .utf8)

        let run = try runOnetCapturing(["fetch", "--from", list.path, "--to", target.path, "--concurrency", "2"])

        XCTAssertEqual(run.status, 0, run.description)
        XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent("100000")), deterministicBytes(100_000))
        XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent("250000")), deterministicBytes(250_000))
        XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent("100000-1")), deterministicBytes(100_000),
                       "the second URL with the same last component gets a unique name")
        XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent("0")), Data())
        XCTAssertEqual(server.requests(path: "/bytes/100000").count, 2, "one request per URL")
        XCTAssertEqual(server.requests(path: "/bytes/250000").count, 1)
        XCTAssertEqual(server.requests(path: "/bytes/0").count, 1)
        let userAgent = try XCTUnwrap(server.requests.first?.header("User-Agent"), "the library's User-Agent is sent")
        XCTAssertTrue(userAgent.hasPrefix("onet (") && userAgent.contains(" OperationNetworking/"), userAgent)
        XCTAssertEqual(run.text.split(separator: "\n").filter { $0.hasPrefix("saved ") }.count, 4, run.description)
        XCTAssertFalse(run.stderr.contains("\u{1B}["), "no escape codes when stderr is not a terminal")
        XCTAssertTrue(run.stderr.contains("Total  4/4 files"), run.description)
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent(".onet-fetch-state").path),
                       "the state file is removed once everything finished")
        let written = try FileManager.default.contentsOfDirectory(atPath: target.path).sorted()
        XCTAssertEqual(written, ["0", "100000", "100000-1", "250000"])
    }

    /// Last path components that try to climb out, hide or clash with the state file are made safe.
    func testNamesNeverLeaveTheDirectory() throws {
        let base = try makeDirectory()
        let target = base.appendingPathComponent("out")
        // /flaky/0/<anything> answers 200, so the last component can be chosen freely.
        // C1 CSI (U+009B) and a right-to-left override (U+202E) would act on the terminal the names are shown on.
        let urls = ["/flaky/0/..%2F..%2Fescape", "/flaky/0/%2E%2E", "/flaky/0/.onet-fetch-state", "/flaky/0/a%00b",
                    "/flaky/0/c%C2%9Bd%E2%80%AEe"]
            .map { server.url($0).absoluteString }

        let run = try runOnetCapturing(["fetch", "--to", target.path] + urls)

        XCTAssertEqual(run.status, 0, run.description)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: base.path), ["out"], "nothing written beside DIR")
        let names = try FileManager.default.contentsOfDirectory(atPath: target.path).sorted()
        XCTAssertEqual(names.count, 5, "\(names)")
        XCTAssertFalse(names.contains { $0.hasPrefix(".") || $0.contains("/") || $0.contains("\0") }, "\(names)")
        XCTAssertTrue(names.contains("c_d_e"), "control and format characters are replaced: \(names.map { $0.unicodeScalars.map(\.value) })")
        XCTAssertFalse(run.stderr.unicodeScalars.contains { $0.value == 0x9B || $0.value == 0x202E }, run.description)
        XCTAssertTrue(names.contains("index"), "a URL whose last component is '..' is saved as index: \(names)")
    }

    /// A 404 and a refused port are reported on stderr, one line each, with exit status 1; the good file is kept.
    func testFailuresAreReportedOneLineEachAndExitNonZero() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let closed = try TestServer()
        let refused = closed.url("/bytes/10")
        closed.shutdown()   // nothing listens on its port any more
        let notFound = server.url("/status/404")

        let run = try runOnetCapturing(["fetch", "--to", target.path, server.url("/bytes/5000").absoluteString,
                                notFound.absoluteString, refused.absoluteString])

        XCTAssertEqual(run.status, 1, run.description)
        let failures = run.stderr.split(separator: "\n").filter { $0.hasPrefix("onet fetch: failed: ") }
        XCTAssertEqual(failures.count, 2, run.description)
        XCTAssertTrue(failures.contains { $0.contains(notFound.absoluteString) && $0.contains("HTTP 404") }, run.description)
        XCTAssertTrue(failures.contains { $0.contains(refused.absoluteString) }, run.description)
        XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent("5000")), deterministicBytes(5000))
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent("404").path),
                       "a failed file (here the error page) is not left behind")
        XCTAssertTrue(run.stderr.contains("Total  1/3 files, 2 failed"), "only the saved file counts as done: \(run.description)")
        let state = try loadState(target)
        XCTAssertEqual(state.files.map(\.status), ["done", "failed", "failed"], "a rerun fetches only the failed ones")
    }

    /// Servers that announce exabyte bodies (`Content-Length` near `Int64.max`, then 100 bytes and a
    /// closed connection) fail those files; the totals saturate instead of overflowing.
    func testHugeDeclaredLengthsFailTheFilesWithoutCrashing() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let claims = [server.url("/claims/5000000000000000000"), server.url("/claims/9223372036854775807")]
        let run = try runOnetCapturing(["fetch", "--to", target.path] + claims.map(\.absoluteString))
        XCTAssertEqual(run.status, 1, run.description)
        let failures = run.stderr.split(separator: "\n").filter { $0.hasPrefix("onet fetch: failed: ") }
        XCTAssertEqual(failures.count, 2, run.description)
        XCTAssertTrue(run.stderr.contains("Total  0/2 files, 2 failed"), "failed files are not done: \(run.description)")
    }

    /// `--retry 2` against /flaky: three requests on the wire and the last body saved; without it, one request and a failure.
    func testRetryIsSentOverTheWire() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let retried = "/flaky/2/\(UUID().uuidString)"
        let once = "/flaky/1/\(UUID().uuidString)"

        let run = try runOnetCapturing(["fetch", "--to", target.path, "--retry", "2", server.url(retried).absoluteString])
        XCTAssertEqual(run.status, 0, run.description)
        XCTAssertEqual(server.requests(path: retried).count, 3, "two 503s, then the 200")
        XCTAssertEqual(try String(contentsOf: target.appendingPathComponent(String(retried.split(separator: "/").last ?? "")),
                                  encoding: .utf8), "success 3", "the last attempt's body is the file")
        XCTAssertTrue(run.stderr.contains("retrying "), run.description)

        let noRetry = try runOnetCapturing(["fetch", "--to", target.path, server.url(once).absoluteString])
        XCTAssertEqual(noRetry.status, 1, noRetry.description)
        XCTAssertEqual(server.requests(path: once).count, 1, "without --retry a 503 is tried once")
        XCTAssertTrue(noRetry.stderr.contains("HTTP 503"), noRetry.description)
    }

    /// SIGINT without a terminal also pauses and saves; against a server that does not do ranges the
    /// rerun gets a 200 and the library skips the prefix already on disk: still byte-exact.
    func testInterruptWithoutTerminalThenServerIgnoringRangesStillByteExact() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let url = server.url("/bytes/1000000?chunkSize=10000&chunkDelayMs=20&ignoreRange=1")
        let file = target.appendingPathComponent("1000000")
        try interruptFetch(of: url, into: target, file: file)
        let state = try loadState(target)
        XCTAssertEqual(state.files.map(\.status), ["paused"])
        let bytes = try XCTUnwrap(state.files.first?.bytes)
        XCTAssertTrue(bytes > 0 && bytes < 1_000_000, "\(bytes)")

        let rerun = try runOnetCapturing(["fetch", "--to", target.path, url.absoluteString])
        XCTAssertEqual(rerun.status, 0, rerun.description)
        XCTAssertEqual(server.requests(path: "/bytes/1000000").count, 2)
        XCTAssertNil(server.requests(path: "/bytes/1000000").last?.header("Range"),
                     "no Accept-Ranges was advertised, so the library asks for the whole body again")
        XCTAssertEqual(try Data(contentsOf: file), deterministicBytes(1_000_000), "the repeated prefix was skipped")
    }

    /// A paused download whose continuation fails (its server is gone) keeps the saved prefix and stays
    /// paused in the state, so a later run can still continue it.
    func testAFailedContinuationKeepsThePausedPrefix() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let other = try TestServer()
        let url = other.url("/bytes/1000000?chunkSize=10000&chunkDelayMs=20")
        let file = target.appendingPathComponent("1000000")
        try interruptFetch(of: url, into: target, file: file)
        let paused = try XCTUnwrap(loadState(target).files.first)
        XCTAssertEqual(paused.status, "paused")
        let bytes = try XCTUnwrap(paused.bytes)
        other.shutdown()   // nothing listens on its port any more

        let rerun = try runOnetCapturing(["fetch", "--to", target.path, url.absoluteString])
        XCTAssertEqual(rerun.status, 1, rerun.description)
        XCTAssertTrue(rerun.stderr.contains("onet fetch: failed: \(url.absoluteString)"), rerun.description)
        let kept = try Data(contentsOf: file)
        XCTAssertEqual(Int64(kept.count), bytes, "the prefix the first run saved is still there")
        XCTAssertEqual(kept, deterministicBytes(Int(bytes)))
        let state = try loadState(target)
        XCTAssertEqual(state.files.map(\.status), ["paused"], "the next run still continues it")
        XCTAssertEqual(state.files.first?.bytes, bytes)
    }

    /// A run with another list of URLs in the same directory keeps the paused entry of the first list,
    /// which then still continues with a Range request.
    func testAnotherListKeepsThePausedEntriesOfTheFirst() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let slow = server.url("/bytes/1000000?chunkSize=10000&chunkDelayMs=20")
        let file = target.appendingPathComponent("1000000")
        try interruptFetch(of: slow, into: target, file: file)
        let bytes = try XCTUnwrap(loadState(target).files.first?.bytes)

        let other = try runOnetCapturing(["fetch", "--to", target.path, server.url("/bytes/2000").absoluteString])
        XCTAssertEqual(other.status, 0, other.description)
        let state = try loadState(target)
        XCTAssertEqual(state.files.map(\.url), [server.url("/bytes/2000").absoluteString, slow.absoluteString])
        XCTAssertEqual(state.files.map(\.status), ["done", "paused"], "the first list's paused file is still recorded")

        let resumed = try runOnetCapturing(["fetch", "--to", target.path, slow.absoluteString])
        XCTAssertEqual(resumed.status, 0, resumed.description)
        XCTAssertEqual(server.requests(path: "/bytes/1000000").last?.header("Range"), "bytes=\(bytes)-")
        XCTAssertEqual(try Data(contentsOf: file), deterministicBytes(1_000_000))
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent("1000000-1").path),
                       "the file continued under its own name")
    }

    /// Each wrong argument is one `onet:` line naming it (status 64), before any request; `--help` has examples
    /// and the state file.
    func testBadArgumentsAreOneLineNamingTheArgument() throws {
        let base = try makeDirectory()
        let list = base.appendingPathComponent("urls.txt")
        try "\(server.url("/bytes/1").absoluteString)\nnot a url\n".write(to: list, atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            (["fetch", server.url("/bytes/1").absoluteString], "--to"),
            (["fetch", "--to", base.path, "--from", base.appendingPathComponent("missing.txt").path], "--from"),
            (["fetch", "--to", base.path, "--from", list.path], "line 2"),
            (["fetch", "--to", base.path, "ftp://example.com/x"], "ftp://example.com/x"),
            (["fetch", "--to", base.path, "--concurrency", "0", server.url("/bytes/1").absoluteString], "--concurrency"),
        ]
        for (arguments, named) in cases {
            let run = try runOnetCapturing(arguments)
            XCTAssertEqual(run.status, 64, run.description)
            XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, run.description)
            XCTAssertTrue(run.stderr.hasPrefix("onet: ") && run.stderr.contains(named), "\(arguments): \(run.description)")
        }
        XCTAssertTrue(server.requests.isEmpty, "nothing is fetched when an argument is wrong")
        let help = try runOnetCapturing(["fetch", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.text.contains("EXAMPLES") || help.text.contains("Examples:"), help.text)
        XCTAssertTrue(help.text.contains(".onet-fetch-state"), help.text)
    }

    // MARK: - Helpers

    /// A fresh temporary directory, removed after the test.
    func makeDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-fetch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        directories.append(directory)
        return directory
    }

    /// The state file of `directory`, decoded independently of onet's own types.
    func loadState(_ directory: URL) throws -> StateFile {
        try JSONDecoder().decode(StateFile.self, from: Data(contentsOf: directory.appendingPathComponent(".onet-fetch-state")))
    }

    /// The documented state file format (`onet fetch --help`).
    struct StateFile: Decodable {
        /// One URL of the run.
        struct Entry: Decodable {
            /// The URL as given.
            let url: String
            /// Its file name in the directory.
            let name: String
            /// done, paused, pending or failed.
            let status: String
            /// The file's size when the state was written.
            let bytes: Int64?
            /// The paused operation's archive.
            let archive: Data?
        }
        /// The format version, 1.
        let version: Int
        /// Every URL, in order.
        let files: [Entry]
    }
}
