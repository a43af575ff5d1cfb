import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `stale-while-revalidate` (RFC 5861 §3) on the wire: a stored response stale by less than its window
/// answers at once, as a hit, while one revalidation of the library's own (one per key, however many
/// requests meet the stale entry) updates the store; past the window the request revalidates before
/// it answers. Each stored response here is 100 s old on arrival (`ageFirst`), fresh for 60 s.
final class StaleWhileRevalidateTests: CacheTestCase {
    private func swrPath(_ name: String, age: Int = 100, extra: String = "") -> String {
        "/cache/\(name)?cc=max-age=60,stale-while-revalidate=600&etag=strong&ageFirst=\(age)\(extra)"
    }

    private func gets(_ name: String) -> [RecordedRequest] {
        requests(to: "/cache/\(name)").filter { $0.method == "GET" }
    }

    /// Waits until no background revalidation of `path` runs (its end is what updates the store).
    private func revalidationEnded(_ path: String) -> Bool {
        let (cache, url) = (cache!, server.url(path))
        return eventually(timeout: 10) { !BackgroundRevalidator.isRunning(cache: cache, key: url) }
    }

    func testWithinTheWindowFiveRequestsAreAnsweredStaleWhileOneRevalidationRuns() throws {
        // The server holds the revalidation's answer back: the five lookups all meet the stale entry.
        let path = swrPath("window", extra: "&revalidationDelayMs=1000")
        XCTAssertEqual(fetch(path).metrics?.cacheStatus, .stored)
        fetch(path, method: "PUT") { $0.urlCache = nil }   // the resource changes behind the cache: v2
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 5
        let done = expectation(description: "five stale answers")
        done.expectedFulfillmentCount = 5
        let operations = (0..<5).map { _ -> HTTPRequestOperation in
            let operation = HTTPRequestOperation(request: request(path))
            operation.urlCache = cache
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, _ in done.fulfill() })
            return operation
        }
        queue.addOperations(operations, waitUntilFinished: false)
        wait(for: [done], timeout: 10)
        for operation in operations {
            XCTAssertNil(operation.error)
            XCTAssertEqual(text(operation), "window v1 #1", "the stale body, not the revalidation's")
            XCTAssertEqual(operation.metrics?.cacheStatus, .hit)
            XCTAssertTrue(operation.cacheAnsweredStale, "marked as a stale hit")
            XCTAssertGreaterThanOrEqual(Int(operation.response?.value(forHTTPHeaderField: "Age") ?? "") ?? 0, 100)
        }
        XCTAssertTrue(revalidationEnded(path))
        let seen = gets("window")
        XCTAssertEqual(seen.count, 2, "the first load and exactly one revalidation")
        XCTAssertEqual(seen.last?.header("If-None-Match"), "\"window-v1\"", "conditional, as a revalidation")
        let after = fetch(path)
        XCTAssertEqual(text(after), "window v2 #2", "the store holds what the revalidation brought")
        XCTAssertEqual(after.metrics?.cacheStatus, .hit)
        XCTAssertFalse(after.cacheAnsweredStale, "fresh now")
        XCTAssertEqual(gets("window").count, 2, "answered without the network")
    }

    func testARevalidationThatFindsNothingChangedFreshensTheEntry() throws {
        let path = swrPath("same")
        fetch(path)
        let stale = fetch(path)
        XCTAssertEqual(stale.metrics?.cacheStatus, .hit)
        XCTAssertTrue(stale.cacheAnsweredStale)
        XCTAssertTrue(revalidationEnded(path))
        XCTAssertEqual(gets("same").count, 2)
        let after = fetch(path)
        XCTAssertEqual(after.metrics?.cacheStatus, .hit)
        XCTAssertFalse(after.cacheAnsweredStale, "the 304 freshened the stored response")
        XCTAssertEqual(text(after), "same v1 #1")
        XCTAssertEqual(gets("same").count, 2)
    }

    func testPastTheWindowTheRequestRevalidatesBeforeAnswering() throws {
        let path = swrPath("late", age: 1_000)   // stale by 940 s, the window is 600 s
        fetch(path)
        fetch(path, method: "PUT") { $0.urlCache = nil }
        let late = fetch(path)
        XCTAssertEqual(text(late), "late v2 #2", "the new response, waited for")
        XCTAssertEqual(late.metrics?.cacheStatus, .stored)
        XCTAssertFalse(late.cacheAnsweredStale)
        XCTAssertEqual(gets("late").last?.header("If-None-Match"), "\"late-v1\"")
        XCTAssertFalse(BackgroundRevalidator.isRunning(cache: cache, key: server.url(path)))
    }

    func testWhatMayNotBeServedStaleIsRevalidatedFirst() throws {
        let rows: [(name: String, path: String, headers: [String: String])] = [
            ("must", "/cache/must?cc=max-age=60,stale-while-revalidate=600,must-revalidate&etag=strong&ageFirst=100", [:]),
            ("asks", swrPath("asks"), ["Cache-Control": "max-age=120"]),
            ("nocache", swrPath("nocache"), ["Cache-Control": "no-cache"]),
        ]
        for row in rows {
            fetch(row.path)
            let second = fetch(row.path, headers: row.headers)
            XCTAssertEqual(second.metrics?.cacheStatus, .revalidated, row.name)
            XCTAssertFalse(second.cacheAnsweredStale, row.name)
        }
        let blocked = swrPath("block")
        fetch(blocked)
        let decided = fetch(blocked) { $0.setCacheResponseBlock { _, proposed in proposed } }
        XCTAssertEqual(decided.metrics?.cacheStatus, .revalidated, "a cache response block decides what is stored")
    }
}
