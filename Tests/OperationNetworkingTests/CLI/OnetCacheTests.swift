import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `--cache-dir` of `onet request` and `onet fetch`: responses kept between runs (each run a process of
/// its own), `-v` telling what the cache did, and no cache at all without the option. The test
/// server's `/cache/<name>` body counts the GETs it answered (`#n`), so a body served from the cache
/// shows the count of the run that stored it.
final class OnetCacheTests: TemporaryDirectoryTestCase {
    private var cacheDirectory: URL { directory.appendingPathComponent("cache") }

    /// `onet request -v -I GET url` with `extra` arguments.
    private func request(_ path: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> OnetRun {
        try runOnet(["request", "-v", "-I"] + extra + ["GET", server.url(path).absoluteString], input: Data(),
                    environment: environment)
    }

    func testWithoutTheOptionEveryRunGoesToTheNetworkAndNothingIsTold() throws {
        // Both runs share a cache home, so a default shared cache would answer the second.
        let home = ["XDG_CACHE_HOME": directory.appendingPathComponent("home-cache").path]
        let first = try request("/cache/plain?cc=max-age=600", environment: home)
        let second = try request("/cache/plain?cc=max-age=600", environment: home)
        XCTAssertEqual(first.status, 0, first.description)
        XCTAssertTrue(first.text.contains("plain v1 #1"), first.description)
        XCTAssertTrue(second.text.contains("plain v1 #2"), "httpie has no cache, nor has onet by default: \(second)")
        XCTAssertFalse(first.stderr.contains("* cache:"), first.description)
        XCTAssertEqual(server.requests(path: "/cache/plain").count, 2)
    }

    func testAFreshResponseIsStoredThenServedByTheNextRunWithoutTheNetwork() throws {
        let options = ["--cache-dir", cacheDirectory.path]
        let first = try request("/cache/fresh?cc=max-age=600", options)
        let second = try request("/cache/fresh?cc=max-age=600", options)
        XCTAssertEqual(first.status, 0, first.description)
        XCTAssertTrue(first.stderr.contains("* cache: stored\n"), first.description)
        XCTAssertTrue(second.stderr.contains("* cache: hit\n"), second.description)
        XCTAssertTrue(second.text.contains("HTTP/1.1 200 OK"), second.description)
        XCTAssertTrue(second.text.contains("fresh v1 #1"), "the stored body: \(second)")
        XCTAssertEqual(server.requests(path: "/cache/fresh").count, 1, "the hit sent nothing")
        XCTAssertTrue(FileManager.default.fileExists(atPath: cacheDirectory.appendingPathComponent("cache.sqlite3").path))
    }

    func testAStaleResponseIsRevalidatedAndItsStoredBodyShown() throws {
        let options = ["--cache-dir", cacheDirectory.path]
        let path = "/cache/tagged?cc=no-cache&etag=strong"
        _ = try request(path, options)
        let second = try request(path, options)
        XCTAssertTrue(second.stderr.contains("* cache: revalidated\n"), second.description)
        XCTAssertTrue(second.text.contains("HTTP/1.1 200 OK"), "a 304 is shown as the stored 200: \(second)")
        XCTAssertTrue(second.text.contains("tagged v1 #1"), second.description)
        let sent = server.requests(path: "/cache/tagged")
        XCTAssertEqual(sent.count, 2)
        XCTAssertEqual(sent.last?.header("If-None-Match"), "\"tagged-v1\"", "the conditional request on the wire")
    }

    func testAResponseThatMayNotBeStoredIsAMiss() throws {
        let run = try request("/cache/secret?cc=no-store", ["--cache-dir", cacheDirectory.path])
        XCTAssertEqual(run.status, 0, run.description)
        XCTAssertTrue(run.stderr.contains("* cache: miss\n"), run.description)
    }

    func testADownloadRefusesTheOption() throws {
        let run = try request("/cache/file?cc=max-age=600", ["--cache-dir", cacheDirectory.path, "--download"])
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.stderr.contains("--cache-dir does not apply to --download"), run.description)
        XCTAssertEqual(server.requests(path: "/cache/file").count, 0)
    }

    func testFetchWritesAFileTheCacheKeptWithoutTheNetwork() throws {
        let url = server.url("/cache/report.txt?cc=max-age=600").absoluteString
        var files: [String] = []
        for name in ["first", "second"] {
            let target = directory.appendingPathComponent(name)
            let run = try runOnet(["fetch", "--cache-dir", cacheDirectory.path, "--to", target.path, url], input: Data())
            XCTAssertEqual(run.status, 0, run.description)
            files.append(try String(contentsOf: target.appendingPathComponent("report.txt"), encoding: .utf8))
        }
        XCTAssertEqual(files, ["report.txt v1 #1", "report.txt v1 #1"], "the second run's file is the stored body")
        XCTAssertEqual(server.requests(path: "/cache/report.txt").count, 1)
    }

    func testAFetchInterruptedThroughTheCacheStartsOverAndThenCompletes() throws {
        let target = directory.appendingPathComponent("out")
        let url = server.url("/bytes/200000?chunkSize=1024&chunkDelayMs=20")
        let arguments = ["fetch", "--cache-dir", cacheDirectory.path, "--to", target.path, url.absoluteString]
        let (process, exited) = try launchOnet(arguments, output: FileHandle.nullDevice, errors: FileHandle.nullDevice)
        let server = self.server!
        XCTAssertTrue(eventually(timeout: 20) { server.requests(path: "/bytes/200000").count == 1 }, "the request never arrived")
        process.interrupt()
        wait(for: [exited], timeout: 30)
        XCTAssertEqual(process.terminationStatus, 130, "interrupted: paused and saved")
        let state = try JSONSerialization.jsonObject(with: Data(contentsOf: target.appendingPathComponent(".onet-fetch-state")))
        let files = try XCTUnwrap((state as? [String: Any])?["files"] as? [[String: Any]])
        XCTAssertEqual(files.map { $0["status"] as? String }, ["pending"], "a body in memory has nothing to continue from")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent("200000").path), "no partial file")

        let again = try runOnet(arguments, input: Data())
        XCTAssertEqual(again.status, 0, again.description)
        XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent("200000")), deterministicBytes(200_000))
        let sent = server.requests(path: "/bytes/200000")
        XCTAssertEqual(sent.count, 2)
        XCTAssertNil(sent.last?.header("Range"), "started over, not continued")
    }

    func testACacheFolderOthersMayWriteToStopsTheToolWithOneLine() throws {
        try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
        XCTAssertEqual(chmod(cacheDirectory.path, 0o777), 0)
        let run = try request("/cache/loose?cc=max-age=600", ["--cache-dir", cacheDirectory.path])
        XCTAssertNotEqual(run.status, 0, run.description)
        let lines = run.stderr.split(separator: "\n").filter { $0.contains("--cache-dir") }
        XCTAssertEqual(lines.count, 1, run.description)
        XCTAssertTrue(run.stderr.contains("--cache-dir: the HTTP cache's '\(cacheDirectory.path)' is writable by others (mode 0777)"),
                      run.description)
        XCTAssertEqual(server.requests(path: "/cache/loose").count, 0, "a request was sent")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: cacheDirectory.path), [])
    }

    func testFetchIntoAFolderHoldingAnotherProgramsDatabaseChangesNothing() throws {
        try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
        let database = cacheDirectory.appendingPathComponent("cache.sqlite3")
        let other = try SQLiteConnection(path: database.path, busyTimeoutMilliseconds: 1_000)
        try other.run("CREATE TABLE notes (body TEXT)")
        try other.run("INSERT INTO notes VALUES ('mine')")
        let before = try Data(contentsOf: database)
        let url = server.url("/cache/other.txt?cc=max-age=600").absoluteString
        let run = try runOnet(["fetch", "--cache-dir", cacheDirectory.path, "--to", directory.appendingPathComponent("out").path, url],
                              input: Data())
        XCTAssertNotEqual(run.status, 0, run.description)
        XCTAssertTrue(run.stderr.contains("holds tables that are not the cache's (table notes)"), run.description)
        XCTAssertEqual(try Data(contentsOf: database), before, "another program's database was changed")
        XCTAssertEqual(server.requests(path: "/cache/other.txt").count, 0)
    }

    func testACacheFolderThatCannotBeMadeStopsTheTool() throws {
        let blocker = directory.appendingPathComponent("a-file")
        try Data("not a folder".utf8).write(to: blocker)
        let run = try request("/cache/blocked?cc=max-age=600", ["--cache-dir", blocker.appendingPathComponent("cache").path])
        XCTAssertNotEqual(run.status, 0, run.description)
        XCTAssertTrue(run.stderr.contains("--cache-dir: the HTTP cache's '\(blocker.appendingPathComponent("cache").path)' cannot be created: "),
                      run.description)
        XCTAssertFalse(run.stderr.contains("kept in memory"), run.description)
        XCTAssertEqual(server.requests(path: "/cache/blocked").count, 0)
    }
}
