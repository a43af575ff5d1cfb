import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// URLCache, opt-in through the cache response block or the request's cache policy.
final class CacheTests: ServerTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        useMemoryOnlyURLCacheUnderAddressSanitizer()
    }

    /// Also the regression test of a leak AddressSanitizer found (issue 12): the body answered from the
    /// cache was never freed while the operation shared the cache entry's storage. Only the ASan run
    /// (`scripts/test --sanitize=address`) sees it, as a LeakSanitizer report at exit.
    func testCacheBlockDecidesWhatIsStoredAndPolicyReadsIt() throws {
        let path = "/bytes/64?case=\(UUID().uuidString)"
        let first = HTTPRequestOperation(request: request(path))
        let asked = Recorder<Int>()
        first.setCacheResponseBlock { _, proposed in
            asked.append(proposed.data.count)
            return proposed
        }
        XCTAssertTrue(run(first).isSuccess)
        XCTAssertEqual(asked.all, [64])
        var cachedRequest = request(path)
        cachedRequest.cachePolicy = .returnCacheDataElseLoad
        let second = HTTPRequestOperation(request: cachedRequest)
        XCTAssertTrue(run(second).isSuccess)
        XCTAssertEqual(second.responseData, deterministicBytes(64))
        XCTAssertEqual(server.requests.count, 1, "the second answer came from the cache")
        XCTAssertEqual(second.response?.statusCode, 200)
    }

    func testBlockReturningNilStoresNothing() throws {
        let path = "/bytes/32?case=\(UUID().uuidString)"
        let first = HTTPRequestOperation(request: request(path))
        first.setCacheResponseBlock { _, _ in nil }
        XCTAssertTrue(run(first).isSuccess)
        var onlyCache = request(path)
        onlyCache.cachePolicy = .returnCacheDataDontLoad
        XCTAssertEqual(run(onlyCache).1.urlErrorCode, .resourceUnavailable)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testNoCachingWithoutOptIn() throws {
        let path = "/bytes/16?case=\(UUID().uuidString)"
        XCTAssertTrue(run(request(path)).1.isSuccess)
        var onlyCache = request(path)
        onlyCache.cachePolicy = .returnCacheDataDontLoad
        XCTAssertEqual(run(onlyCache).1.urlErrorCode, .resourceUnavailable)
    }
}
