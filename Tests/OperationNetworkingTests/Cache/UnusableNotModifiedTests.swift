import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A `304` about another response than the stored one (a different strong entity tag, RFC 9111
/// §4.3.4) can neither update nor select it: when the cache made the request conditional, the request
/// goes again without its conditional fields, once, and the app gets that response; a `304` to a
/// request the app made conditional itself stays the app's.
final class UnusableNotModifiedTests: CacheTestCase {
    func testA304WithAnotherEntityTagIsFollowedByOneUnconditionalRequest() throws {
        let path = "/cache/other?cc=max-age=0&etag=strong&lastModified=1&mismatch304=1"
        XCTAssertEqual(fetch(path).metrics?.cacheStatus, .stored)
        let second = fetch(path)
        let seen = requests(to: "/cache/other")
        XCTAssertEqual(seen.count, 3, "the first load, the cache's revalidation, then the request unconditional once")
        guard seen.count == 3 else { return }
        XCTAssertEqual(seen[1].header("If-None-Match"), "\"other-v1\"", "the revalidation was conditional")
        XCTAssertNotNil(seen[1].header("If-Modified-Since"))
        XCTAssertNil(seen[2].header("If-None-Match"), "sent again without the cache's fields")
        XCTAssertNil(seen[2].header("If-Modified-Since"))
        XCTAssertNil(second.error)
        XCTAssertEqual(second.response?.statusCode, 200, "never the bare 304 to a GET the app did not make conditional")
        XCTAssertEqual(text(second), "other v1 #3", "the unconditional request's body")
        XCTAssertEqual(second.metrics?.cacheStatus, .stored, "and it replaced the stored response")
        XCTAssertEqual(stored(path)?.body, Data("other v1 #3".utf8))
    }

    func testTheResendGoesOverTheSameConnection() throws {
        let path = "/cache/reused?cc=max-age=0&etag=strong&mismatch304=1"
        fetch(path)
        let before = server.acceptedConnections
        let second = fetch(path)
        XCTAssertEqual(text(second), "reused v1 #3")
        XCTAssertEqual(server.acceptedConnections, before, "the revalidation and its resend reused the kept-alive connection")
    }

    func testA304ToTheAppsOwnConditionalRequestStaysTheApps() throws {
        let path = "/cache/own?cc=max-age=0&etag=strong&mismatch304=1"
        fetch(path)
        let own = fetch(path, headers: ["If-None-Match": "\"own-v1\""])
        let seen = requests(to: "/cache/own")
        XCTAssertEqual(seen.count, 2, "not sent again")
        guard seen.count == 2 else { return }
        XCTAssertEqual(seen[1].header("If-None-Match"), "\"own-v1\"")
        XCTAssertEqual(own.response?.statusCode, 304, "the app asked for it")
        XCTAssertEqual(own.metrics?.cacheStatus, .notConsulted)
    }

    func testA304AboutTheStoredResponseStillValidatesIt() throws {
        let path = "/cache/same?cc=max-age=0&etag=strong"
        fetch(path)
        let second = fetch(path)
        XCTAssertEqual(requests(to: "/cache/same").count, 2, "no resend after a 304 that matches")
        XCTAssertEqual(second.metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(text(second), "same v1 #1")
    }
}
