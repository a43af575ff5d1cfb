import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The cache response block and the cache policies of AFNetworking 2.x's tests, under the default
/// caching of `.useProtocolCachePolicy`: nothing to opt into, the block decides last.
final class CacheTests: CacheTestCase {
    /// Also the regression test of a leak AddressSanitizer found (issue 12): the body answered from the
    /// cache was never freed while the operation shared the cache entry's storage. Only the ASan run
    /// (`scripts/test --sanitize=address`) sees it, as a LeakSanitizer report at exit.
    func testCacheBlockDecidesWhatIsStoredAndPolicyReadsIt() throws {
        let path = "/bytes/64?case=\(UUID().uuidString)"
        let asked = Recorder<Int>()
        let first = fetch(path) { operation in
            operation.setCacheResponseBlock { _, proposed in
                asked.append(proposed.data.count)
                return proposed
            }
        }
        XCTAssertNil(first.error)
        XCTAssertEqual(asked.all, [64])
        let second = fetch(path, policy: .returnCacheDataElseLoad)
        XCTAssertNil(second.error)
        XCTAssertEqual(second.responseData, deterministicBytes(64))
        XCTAssertEqual(server.requests.count, 1, "the second answer came from the cache")
        XCTAssertEqual(second.response?.statusCode, 200)
    }

    func testBlockReturningNilStoresNothing() throws {
        let path = "/bytes/32?case=\(UUID().uuidString)"
        let first = fetch(path) { $0.setCacheResponseBlock { _, _ in nil } }
        XCTAssertNil(first.error)
        XCTAssertEqual((fetch(path, policy: .returnCacheDataDontLoad).error as? URLError)?.code, .resourceUnavailable)
        XCTAssertEqual(server.requests.count, 1)
    }

    /// Without a block or a policy asking for it, a GET's response is stored (NSURLConnection's
    /// behaviour under `.useProtocolCachePolicy`), and a fresh one answers the next request.
    func testTheDefaultPolicyStoresWithoutOptingIn() throws {
        let path = "/bytes/16?case=\(UUID().uuidString)"
        XCTAssertNil(fetch(path).error)
        XCTAssertEqual(fetch(path, policy: .returnCacheDataDontLoad).responseData, deterministicBytes(16))
        let again = fetch(path)
        XCTAssertEqual(again.metrics?.cacheStatus, .hit, "fresh by its Last-Modified (heuristic, RFC 9111 §4.2.2)")
        XCTAssertEqual(server.requests.count, 1)
    }
}
