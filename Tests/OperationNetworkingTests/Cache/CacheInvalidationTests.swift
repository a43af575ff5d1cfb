import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// An unsafe request's part in the cache, as `CacheInvalidation` keeps it (RFC 9111 §4.4): nothing of
/// the cache is made for its run, and what its success changed is gone before its handlers run, in
/// the library's store (changed in memory, at once) and in corelibs' cache (changed on a queue of its
/// own, since it writes files in the call).
final class CacheInvalidationTests: CacheTestCase {
    func testAnUnsafeRequestsRunKeepsNoCachePart() throws {
        let path = "/cache/item?cc=max-age=600"
        fetch(path)
        let post = fetch(path, method: "POST")
        XCTAssertNil(post.error)
        XCTAssertEqual(post.metrics?.cacheStatus, .notConsulted)
        // The measured choice (bench/runs/cache-2026-12-07-round9.md): a POST reads the method and URL, and
        // keeps neither a `CacheState` nor a storage for its run.
        XCTAssertTrue(post.state.withLock { $0.run.cache == nil }, "an unsafe request's run kept a cache part")
        XCTAssertNil(stored(path), "its success invalidated the stored response")
    }

    func testWhatASuccessChangedIsGoneBeforeItsHandlersRunInEitherCache() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("onet-invalidation-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = SQLiteURLCache(memoryCapacity: 1 << 20, diskCapacity: 20 << 20, directory: folder)
        for (name, chosen) in [("corelibs' URLCache", cache!), ("SQLiteURLCache", library as URLCache)] {
            let path = "/cache/\(name.filter { $0.isLetter })?cc=max-age=600"
            fetch(path) { $0.urlCache = chosen }
            XCTAssertNotNil(CacheStorage(chosen).storedResponse(for: URLRequest(url: server.url(path))), name)
            let operation = HTTPRequestOperation(request: request(path, method: "PUT"))
            operation.urlCache = chosen
            let url = server.url(path)
            let seenInHandler = Protected<Bool?>(nil)
            let done = expectation(description: "handlers, \(name)")
            operation.setCompletionBlockWithSuccess({ _, _ in
                let found = CacheStorage(chosen).storedResponse(for: URLRequest(url: url))
                seenInHandler.withLock { $0 = found != nil }
                done.fulfill()
            }, failure: { _, _ in done.fulfill() })
            operation.start()
            wait(for: [done], timeout: 10)
            XCTAssertEqual(seenInHandler.withLock { $0 }, false, "\(name): the stored response was still there in the handler")
        }
    }
}
