import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `start()` and `resume()` ask the cache before they take the operation's lock (the storage may read
/// files), then apply the event under it. When another thread's `resume()` comes between the two (an
/// operation paused before the queue's start reached it), the start that would have done nothing begins
/// a run from nothing after all: that run must not go without the cache (not answered from it, nothing
/// stored, an unsafe request invalidating nothing). The interleaving is made here step by step, with
/// the same calls `startOrResume` makes, in the order the two threads would make them.
final class CacheLookupRaceTests: ServerTestCase {
    private var cache: SQLiteURLCache!
    private var cacheDirectory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-race-\(UUID().uuidString)")
        cache = SQLiteURLCache(memoryCapacity: 4 << 20, diskCapacity: 20 << 20, directory: cacheDirectory)
    }

    override func tearDown() {
        cache?.flush()
        cache = nil
        try? FileManager.default.removeItem(at: cacheDirectory)
        super.tearDown()
    }

    func testAStartThatAResumeTurnedIntoARunIsLookedUpAgainAndAnsweredFromTheCache() throws {
        let path = "/cache/race?cc=max-age%3D600"
        let stored = operation(path)
        XCTAssertTrue(run(stored).isSuccess)
        let body = try XCTUnwrap(stored.responseData)

        let operation = operation(path)
        operation.pause()   // before any start: parked, not ready
        let start: (inout OperationState) -> OperationState.Action? = { $0.start() }
        let security = operation.securitySnapshot()
        // The queue's thread: its start, on a parked operation, begins no run, so nothing is looked up.
        let early = operation.cacheLookup(security: security, for: start)
        XCTAssertNil(early)
        // Another thread's resume lands before that start takes the lock: the start now begins a run.
        operation.resume()
        XCTAssertNil(operation.apply(start, security: security, cache: early, trace: nil),
                     "a run from nothing that was not looked up is not begun: it would skip the cache")
        XCTAssertFalse(operation.isExecuting, "refused without a change")

        let done = expectation(description: "handlers")
        operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, error in
            XCTFail("\(error)")
            done.fulfill()
        })
        operation.start()   // the start as `startOrResume` then makes it: looked up again
        wait(for: [done], timeout: 10)
        XCTAssertEqual(operation.metrics?.cacheStatus, .hit)
        XCTAssertEqual(operation.responseData, body)
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/race" }.count, 1, "only the fetch that stored it")
    }

    /// An operation for `path` through the test's cache.
    private func operation(_ path: String) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request(path))
        operation.urlCache = cache
        return operation
    }
}
