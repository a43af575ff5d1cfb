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

    /// The `Cookie` line passes the check every header passes: a stored cookie with CR, LF or NUL in
    /// its name or value (put there through the storage's API) is left out, the others still go.
    func testAStoredCookieWithALineBreakNeverBreaksTheCookieLine() throws {
        let good = try store([:])
        let badValue = try store([.value: "v\r\nX-Injected: value"])
        let badName = try store([.name: "onet\(UInt32.random(in: 0...UInt32.max))\nX-Injected-Name: yes"])
        names.append(badName)
        let nul = try store([.value: "v\u{0}w"])
        XCTAssertEqual(cookieHeader(sentTo: "/echo"), "\(good)=v")
        let received = try XCTUnwrap(server.requests.last)
        XCTAssertNil(received.header("X-Injected"), "\(received.headers)")
        XCTAssertNil(received.header("X-Injected-Name"), "\(received.headers)")
        let description = HTTPRequestOperation(request: request("/echo")).curlDescription(redactingSecrets: false)
        XCTAssertTrue(description.contains("Cookie: \(good)=v'"), description)
        for name in [badValue, nul] { XCTAssertFalse(description.contains(name), description) }
        XCTAssertFalse(description.contains("X-Injected"), description)
    }

    /// Cookies another client put in the shared storage (corelibs' `URLSession` stores a response's
    /// `Domain=0.1` or `Domain=localhost` as it is) still go only where RFC 6265 lets them.
    func testACookieStoredForAnAddressSuffixOrAPublicSuffixGoesToNoOtherSite() throws {
        let both = try TestServer(host: "0.0.0.0")
        defer { both.shutdown() }
        let port = try XCTUnwrap(both.baseURL.port)
        _ = try store([.domain: ".0.1"])   // what 127.0.0.1 setting Domain=0.1 leaves in corelibs' storage
        let exact = try store([.domain: "127.0.0.1"])
        let everyLocalhost = try store([.domain: ".localhost"])
        let example = try store([.domain: ".example.localhost"])
        func sent(_ url: String, through proxy: TestServer?) throws -> String? {
            let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: url))))
            operation.proxy = proxy.map { .proxy($0.baseURL) } ?? .direct
            _ = run(operation)
            return (proxy ?? both).requests.last?.header("Cookie")
        }
        XCTAssertNil(try sent("http://127.5.0.1:\(port)/echo", through: nil), "an address is no domain")
        XCTAssertEqual(try sent("http://127.0.0.1:\(port)/echo", through: nil), "\(exact)=v")
        XCTAssertNil(try sent("http://a.localhost/echo", through: server), "localhost is a public suffix")
        XCTAssertEqual(try sent("http://a.example.localhost/echo", through: server), "\(example)=v")
        XCTAssertEqual(try sent("http://localhost/echo", through: server), "\(everyLocalhost)=v", "the host itself")
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
