import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `.stored` only when stored: the library's store writes its file in batches, so an operation says
/// `.stored` once its batch is written, and never when the write fails (a file that cannot grow, as
/// a full disk); `LoggingEventMonitor` then says the write failed, on the next operation.
final class CacheWriteReportTests: CacheDirectoryTestCase {
    private var server: TestServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try TestServer()
    }

    override func tearDown() {
        server?.shutdown()
        super.tearDown()
    }

    @discardableResult
    private func get(_ path: String, _ cache: URLCache, monitor: EventMonitor? = nil) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: URLRequest(url: server.url(path)))
        operation.urlCache = cache
        if let monitor { operation.eventMonitors = [monitor] }
        XCTAssertTrue(run(operation).isSuccess, path)
        return operation
    }

    func testAStoreIsReportedOnceItsBatchIsWritten() throws {
        let cache = openSQLiteCache()
        let operation = get("/cache/written?cc=max-age%3D600", cache)
        XCTAssertEqual(operation.metrics?.cacheStatus, .miss, "the batch is not written yet")
        cache.flush()
        XCTAssertEqual(operation.metrics?.cacheStatus, .stored, "written")
        XCTAssertEqual(get("/cache/written?cc=max-age%3D600", openSQLiteCache()).metrics?.cacheStatus, .hit,
                       "another cache on the file finds it")
    }

    func testAFileThatCannotGrowStoresNothingAndTheFailureIsLogged() throws {
        let cache = openSQLiteCache()
        get("/cache/small?cc=max-age%3D600", cache)
        cache.flush()
        // The file may not grow by one page from now on: what SQLite answers a full disk with.
        cache.database.withLock { database in
            database.use { connection in
                guard case .integer(let pages) = try connection.run("PRAGMA page_count").first?.first else { return }
                _ = try connection.run("PRAGMA max_page_count = \(pages)")
            }
        }
        let path = "/bytes/200000"   // heuristically fresh (its Last-Modified), too large for the file's free pages
        let big = get(path, cache)
        XCTAssertEqual(big.responseData?.count, 200_000)
        cache.flush()
        XCTAssertEqual(big.metrics?.cacheStatus, .miss, "never .stored: the write failed")
        let entries = Recorder<LogEntry>()
        let monitor = LoggingEventMonitor(logger: Logger(label: "test") { _ in CapturingLogHandler(entries: entries) })
        let next = get(path, cache, monitor: monitor)
        XCTAssertEqual(server.requests.filter { $0.path == path }.count, 2, "nothing was stored: the network answered")
        XCTAssertNotEqual(next.metrics?.cacheStatus, .hit)
        XCTAssertTrue(eventually { entries.all.contains { $0.message == "HTTP request finished" } })
        let warnings = entries.all.filter { $0.level == .warning }
        XCTAssertEqual(warnings.map(\.message), ["HTTP cache write failed"])
        let reason = warnings.first?.metadata["reason"] ?? ""
        XCTAssertTrue(reason.contains("full"), reason)
    }
}
