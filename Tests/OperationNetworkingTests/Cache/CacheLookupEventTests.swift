import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// The cache is read only for a call that starts a run from nothing, as `OperationState` decides it:
/// a `resume()` of an operation that never paused, or a `start()` of one paused before its queue ran
/// it, reads nothing (a read bumps an entry's recency, and may remove a damaged one).
final class CacheLookupEventTests: ServerTestCase {
    func testOnlyACallThatStartsARunReadsTheCache() throws {
        let cache = CountingCache(memoryCapacity: 1 << 20, diskCapacity: 0, diskPath: nil)
        let operation = HTTPRequestOperation(request: request("/cache/events?cc=max-age%3D600"))
        operation.urlCache = cache

        operation.resume()
        XCTAssertEqual(cache.reads, 0, "resume() of a ready operation starts nothing")
        operation.pause()
        operation.start()
        XCTAssertEqual(cache.reads, 0, "start() of an operation paused before it started sends nothing")
        XCTAssertTrue(operation.isPaused)

        let (done, box) = recordOutcome(of: operation)
        operation.resume()
        wait(for: [done], timeout: 10)
        XCTAssertTrue(box.value?.isSuccess == true)
        XCTAssertEqual(cache.reads, 1, "the resume that started the run read the cache once")
    }
}

/// A cache that counts its reads.
private final class CountingCache: URLCache, @unchecked Sendable {
    private let count = Protected(0)

    var reads: Int { count.value }

    override func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        count.withLock { $0 += 1 }
        return super.cachedResponse(for: request)
    }
}
