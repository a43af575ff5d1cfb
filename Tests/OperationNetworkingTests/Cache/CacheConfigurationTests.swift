import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Where the cache comes from (`urlCache`: `URLCache.shared` by default, `nil` for none, copied and
/// handed down by the manager) and who sees what it did (metrics, event monitors, the logging monitor).
final class CacheConfigurationTests: CacheTestCase {
    /// Runs the test with `URLCache.shared` replaced by the test's cache.
    private func withTheTestCacheShared(_ body: () throws -> Void) rethrows {
        let shared = URLCache.shared
        URLCache.shared = cache
        defer { URLCache.shared = shared }
        try body()
    }

    func testTheDefaultIsTheSharedCacheAsItIsWhenTheOperationStarts() throws {
        let operation = HTTPRequestOperation(request: request("/cache/default?cc=max-age=600"))
        XCTAssertTrue(operation.urlCache === URLCache.shared)
        withTheTestCacheShared {
            XCTAssertTrue(operation.urlCache === cache, "read when asked for, not at init")
            XCTAssertTrue(run(operation).isSuccess)
            let second = HTTPRequestOperation(request: request("/cache/default?cc=max-age=600"))
            XCTAssertTrue(run(second).isSuccess)
            XCTAssertEqual(second.metrics?.cacheStatus, .hit)
        }
        XCTAssertEqual(requests(to: "/cache/default").count, 1)
    }

    func testNilTurnsCachingOff() throws {
        let path = "/cache/off?cc=max-age=600"
        let off = fetch(path) { $0.urlCache = nil }
        XCTAssertNil(off.urlCache)
        XCTAssertEqual(off.metrics?.cacheStatus, .notConsulted)
        // Nothing of the cache is made for such a run (its lookup reads the policy alone).
        XCTAssertTrue(off.state.withLock { $0.run.cache == nil }, "a run with caching off kept a cache part")
        fetch(path) { $0.urlCache = nil }
        XCTAssertEqual(requests(to: "/cache/off").count, 2)
        let refused = fetch(path, policy: .returnCacheDataDontLoad) { $0.urlCache = nil }
        XCTAssertEqual((refused.error as? URLError)?.code, .resourceUnavailable, "may not load, and no cache to read")
        XCTAssertEqual(requests(to: "/cache/off").count, 2)
    }

    func testCopiesAndTheManagerCarryTheCache() throws {
        let operation = HTTPRequestOperation(request: request("/cache/copied"))
        operation.urlCache = cache
        XCTAssertTrue((operation.copy() as? HTTPRequestOperation)?.urlCache === cache)
        operation.urlCache = nil
        XCTAssertNil((operation.copy() as? HTTPRequestOperation)?.urlCache)

        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        XCTAssertTrue(manager.urlCache === URLCache.shared)
        manager.urlCache = cache
        let made = manager.httpRequestOperation(with: request("/cache/managed"), success: nil, failure: nil)
        XCTAssertTrue(made.urlCache === cache)
        XCTAssertTrue((manager.copy() as? HTTPRequestOperationManager)?.urlCache === cache)
        manager.urlCache = nil
        XCTAssertNil(manager.httpRequestOperation(with: request("/cache/managed"), success: nil, failure: nil).urlCache)
    }

    func testTheManagersArchiveRecordsOnlyWhetherCachingIsOff() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.urlCache = cache
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: try SafeArchive.archive(manager))
        XCTAssertTrue(restored.urlCache === URLCache.shared, "the cache itself is not archived")
        manager.urlCache = nil
        let off = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: try SafeArchive.archive(manager))
        XCTAssertNil(off.urlCache)
    }

    func testMonitorsAndTheLogSeeWhatTheCacheDid() throws {
        let seen = Recorder<CacheStatus?>()
        let monitor = CacheStatusMonitor(seen: seen)
        let entries = Recorder<LogEntry>()
        let logging = LoggingEventMonitor(logger: Logger(label: "test") { _ in CapturingLogHandler(entries: entries) })
        let path = "/cache/watched?cc=max-age=0&etag=strong"
        for _ in 0..<2 { fetch(path) { $0.eventMonitors = [monitor, logging] } }
        fetch("/cache/watched-fresh?cc=max-age=600")
        fetch("/cache/watched-fresh?cc=max-age=600") { $0.eventMonitors = [monitor, logging] }
        fetch("/echo", method: "POST") { $0.eventMonitors = [monitor, logging] }
        XCTAssertTrue(eventually { entries.all.filter { $0.level == .info }.count == 4 })
        XCTAssertEqual(seen.all, [.stored, .revalidated, .hit, .notConsulted])
        XCTAssertEqual(entries.all.filter { $0.level == .info }.map { $0.metadata["cache"] },
                       ["stored", "revalidated", "hit", "notConsulted"])
    }

    /// Every test class derives from `LibraryTestCase`, so no test writes into the user's cache
    /// directory or sees another test's stored responses through `URLCache.shared`.
    func testEveryTestClassIsolatesTheSharedCache() throws {
        let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        let enumerator = try XCTUnwrap(FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil))
        let pattern = try NSRegularExpression(pattern: #"class\s+(\w+)\s*:\s*XCTestCase\b"#)
        var offenders: [String] = []
        for case let file as URL in enumerator where file.pathExtension == "swift" {
            let source = try String(contentsOf: file, encoding: .utf8)
            for match in pattern.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
                guard let range = Range(match.range(at: 1), in: source), source[range] != "LibraryTestCase" else { continue }
                offenders.append("\(file.lastPathComponent): \(source[range])")
            }
        }
        XCTAssertEqual(offenders, [], "derive from LibraryTestCase (or a subclass) instead of XCTestCase")
        XCTAssertEqual(URLCache.shared.memoryCapacity, 0)
        XCTAssertEqual(URLCache.shared.diskCapacity, 0)
    }
}

/// Records `metrics.cacheStatus` when an operation finishes.
private final class CacheStatusMonitor: EventMonitor, Sendable {
    let seen: Recorder<CacheStatus?>
    init(seen: Recorder<CacheStatus?>) { self.seen = seen }
    func operationDidFinish(_ operation: URLConnectionOperation) {
        seen.append(operation.metrics?.cacheStatus)
    }
}
