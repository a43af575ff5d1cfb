import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The cookies a request carries are scoped as RFC 6265 says, whatever corelibs'
/// `HTTPCookieStorage.cookies(for:)` returns (it matches the domain only): checked on the wire.
final class CookieScopeTests: ServerTestCase {
    private var names: [String] = []

    override func tearDown() {
        let storage = HTTPCookieStorage.shared
        storage.cookies?.filter { names.contains($0.name) }.forEach(storage.deleteCookie)
        super.tearDown()
    }

    /// Stores a cookie for the test server's host with `properties` added; returns its name.
    private func store(_ properties: [HTTPCookiePropertyKey: Any]) throws -> String {
        let name = "onet\(UInt32.random(in: 0...UInt32.max))"
        names.append(name)
        var all: [HTTPCookiePropertyKey: Any] = [.name: name, .value: "v", .domain: server.baseURL.host ?? "127.0.0.1",
                                                 .path: "/"]
        all.merge(properties) { $1 }
        HTTPCookieStorage.shared.setCookie(try XCTUnwrap(HTTPCookie(properties: all)))
        return name
    }

    private func cookieHeader(sentTo path: String) -> String? {
        _ = run(request(path))   // a 404 for paths the server does not know: only the request's head matters
        return server.requests.last?.header("Cookie")
    }

    func testASecureCookieNeverGoesOverPlainHTTP() throws {
        let secure = try store([.secure: "TRUE"])
        let plain = try store([:])
        XCTAssertTrue(HTTPCookieStorage.shared.cookies(for: server.url("/echo"))?.contains { $0.name == secure } ?? false,
                      "corelibs returns it for http (the leak this guards against)")
        let header = try XCTUnwrap(cookieHeader(sentTo: "/echo"))
        XCTAssertTrue(header.contains("\(plain)=v"), header)
        XCTAssertFalse(header.contains(secure), "a Secure cookie went over http: \(header)")
    }

    func testAPathScopedCookieGoesOnlyToItsPath() throws {
        let scoped = try store([.path: "/only-here"])
        XCTAssertNil(cookieHeader(sentTo: "/echo"), "not sent outside its path")
        XCTAssertNil(cookieHeader(sentTo: "/only-hereafter"), "a prefix that is not a path boundary")
        XCTAssertEqual(cookieHeader(sentTo: "/only-here"), "\(scoped)=v")
        XCTAssertEqual(cookieHeader(sentTo: "/only-here/deeper"), "\(scoped)=v")
    }

    /// The network thread reads whether the storage is empty once per admission pass: a cookie set
    /// after a request found the storage empty must still go with the next request.
    func testACookieSetAfterTheStorageWasSeenEmptyGoesWithTheNextRequest() throws {
        let storage = HTTPCookieStorage.shared
        let kept = storage.cookies ?? []
        kept.forEach(storage.deleteCookie)
        addTeardownBlock { kept.forEach(storage.setCookie) }
        XCTAssertNil(cookieHeader(sentTo: "/echo"), "the storage is empty")
        let name = try store([:])
        XCTAssertEqual(cookieHeader(sentTo: "/echo"), "\(name)=v")
        storage.deleteCookie(try XCTUnwrap(storage.cookies?.first { $0.name == name }))
        XCTAssertNil(cookieHeader(sentTo: "/echo"), "a deleted cookie is not sent")
    }

    func testPathMatchingFollowsRFC6265() {
        XCTAssertTrue(CookieScope.pathMatches(cookiePath: "/", requestPath: "/anything"))
        XCTAssertTrue(CookieScope.pathMatches(cookiePath: "/a", requestPath: "/a"))
        XCTAssertTrue(CookieScope.pathMatches(cookiePath: "/a", requestPath: "/a/b"))
        XCTAssertTrue(CookieScope.pathMatches(cookiePath: "/a/", requestPath: "/a/b"))
        XCTAssertFalse(CookieScope.pathMatches(cookiePath: "/a", requestPath: "/ab"))
        XCTAssertFalse(CookieScope.pathMatches(cookiePath: "/a/b", requestPath: "/a"))
    }

    func testAnExpiredCookieIsNotSent() throws {
        let name = try store([.expires: Date().addingTimeInterval(3_600)])
        let url = server.url("/echo")
        XCTAssertEqual(CookieScope.cookies(in: .shared, for: url).filter { $0.name == name }.count, 1)
        XCTAssertEqual(CookieScope.cookies(in: .shared, for: url, now: Date().addingTimeInterval(7_200))
                        .filter { $0.name == name }.count, 0, "past its expiry")
    }
}
