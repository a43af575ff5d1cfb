import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The response block is asked about what arrives from the network only: a stored response answering
/// and the `304` that revalidated one are the cache's, and the stored response was asked about when
/// it arrived. A `304` to a conditional request of the caller's own is the response, and is asked about.
final class DidReceiveResponseCacheTests: CacheTestCase {
    func testResponsesFromTheCacheAreNotAskedAbout() {
        let asked = Recorder<Int>()
        let ask: (HTTPRequestOperation) -> Void = { operation in
            operation.setDidReceiveResponseBlock { _, response in
                asked.append(response.statusCode)
                return .allow
            }
        }
        let fresh = "/cache/fresh?cc=max-age=600"
        let first = fetch(fresh, configure: ask)
        let hit = fetch(fresh, configure: ask)
        XCTAssertEqual(text(hit), text(first))
        XCTAssertEqual(requests(to: "/cache/fresh").count, 1)

        let stale = "/cache/stale?cc=max-age=0&etag=strong"
        fetch(stale, configure: ask)
        let revalidated = fetch(stale, configure: ask)
        XCTAssertEqual(requests(to: "/cache/stale").last?.header("If-None-Match"), "\"stale-v1\"")
        XCTAssertEqual(revalidated.response?.statusCode, 200)
        XCTAssertEqual(asked.all, [200, 200])

        let own = fetch(stale, headers: ["If-None-Match": "\"stale-v1\""], configure: ask)
        XCTAssertEqual(own.response?.statusCode, 304)
        XCTAssertEqual(asked.all, [200, 200, 304])
    }
}
