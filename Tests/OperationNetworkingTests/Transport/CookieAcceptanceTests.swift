import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Which cookies a response may set, RFC 6265 §5.3: checked on the wire. Requests for names such as
/// `a.example.com` go through the test server acting as an http proxy (it answers absolute-form
/// requests), so each host name is what the library scopes cookies by and every `Cookie` line the
/// server records is what the library sent for that name.
final class CookieAcceptanceTests: ServerTestCase {
    /// Each test's cookie names start with it, so tearDown removes exactly what the test stored.
    private let prefix = "onetaccept\(UInt32.random(in: 0...UInt32.max))"

    override func tearDown() {
        CookieAcceptanceTests.removeCookies(named: prefix)
        super.tearDown()
    }

    /// Removes every cookie of the shared storage whose name starts with `prefix`.
    static func removeCookies(named prefix: String) {
        let storage = HTTPCookieStorage.shared
        storage.cookies?.filter { $0.name.hasPrefix(prefix) }.forEach(storage.deleteCookie)
    }

    /// GETs `url` and returns the `Cookie` line `recorder` (the test's server by default) received:
    /// through the test server as proxy by default, straight to the URL's host and port otherwise.
    private func cookieLine(_ url: String, recorder: TestServer? = nil, proxied: Bool = true,
                            policy: SecurityPolicy? = nil) throws -> String? {
        let recorder = recorder ?? server!
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: url))))
        operation.proxy = proxied ? .proxy(server.baseURL) : .direct
        if let policy { operation.securityPolicy = policy }
        let before = recorder.requests.count
        let outcome = run(operation)
        XCTAssertEqual(recorder.requests.count, before + 1, "\(url): \(String(describing: outcome.error))")
        return recorder.requests.last?.header("Cookie")
    }

    /// Has `origin` answer with one `Set-Cookie` per line (the names get this test's prefix).
    private func setCookies(from origin: String, _ lines: [String], recorder: TestServer? = nil, proxied: Bool = true,
                            policy: SecurityPolicy? = nil) throws {
        var components = try XCTUnwrap(URLComponents(string: origin + "/cookies/raw"))
        components.queryItems = lines.map { URLQueryItem(name: "set", value: prefix + $0) }
        _ = try cookieLine(try XCTUnwrap(components.url).absoluteString, recorder: recorder, proxied: proxied, policy: policy)
    }

    /// The names (without the prefix) of this test's cookies in the shared storage, sorted.
    private var storedNames: [String] {
        (HTTPCookieStorage.shared.cookies ?? []).map(\.name).filter { $0.hasPrefix(prefix) }
            .map { String($0.dropFirst(prefix.count)) }.sorted()
    }

    /// The names (without the prefix) in a `Cookie` line, sorted; empty for no line.
    private func names(_ line: String?) -> [String] {
        (line ?? "").split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            .compactMap { $0.split(separator: "=").first.map(String.init) }
            .filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }.sorted()
    }

    func testADomainThatIsATopLevelDomainReachesNoOtherSite() throws {
        try setCookies(from: "http://a.example.com", ["com=1; Domain=com", "dotcom=1; Domain=.com", "parent=1; Domain=example.com",
                                                     "host=1", "sibling=1; Domain=b.example.com"])
        XCTAssertEqual(names(try cookieLine("http://other.com/echo")), [], "Domain=com crossed to another site")
        XCTAssertEqual(names(try cookieLine("http://b.example.com/echo")), ["parent"], "example.com is no public suffix")
        XCTAssertEqual(names(try cookieLine("http://a.example.com/echo")), ["host", "parent"])
        XCTAssertEqual(storedNames, ["host", "parent"])
    }

    func testADomainOnThePublicSuffixListReachesNoOtherSite() throws {
        try setCookies(from: "http://shop.example.co.uk", ["couk=1; Domain=co.uk", "uk=1; Domain=uk", "own=1; Domain=example.co.uk"])
        try setCookies(from: "http://me.github.io", ["io=1; Domain=github.io"])
        XCTAssertEqual(names(try cookieLine("http://bank.co.uk/echo")), [])
        XCTAssertEqual(names(try cookieLine("http://www.example.co.uk/echo")), ["own"])
        XCTAssertEqual(names(try cookieLine("http://you.github.io/echo")), [], "github.io is a private public suffix")
        XCTAssertEqual(storedNames, ["own"])
    }

    /// `.test` and `localhost` are on no list: the list's `*` rule makes every single label a public suffix.
    func testASingleLabelDomainReachesNoOtherSite() throws {
        try setCookies(from: "http://a.test", ["test=1; Domain=.test"])
        try setCookies(from: "http://a.localhost", ["localhost=1; Domain=localhost"])
        XCTAssertEqual(names(try cookieLine("http://b.test/echo")), [])
        XCTAssertEqual(names(try cookieLine("http://b.localhost/echo")), [])
        XCTAssertEqual(names(try cookieLine("http://localhost/echo")), [])
        XCTAssertEqual(names(try cookieLine("http://a.test/echo")), [], "a Domain the host is not itself is ignored")
        XCTAssertEqual(storedNames, [])
    }

    /// §5.3 step 5: a public suffix named by the host itself makes a cookie for that host alone.
    func testAPublicSuffixThatIsTheHostItselfSetsAHostOnlyCookie() throws {
        try setCookies(from: "http://localhost", ["self=1; Domain=localhost; Path=/"])
        try setCookies(from: "http://github.io", ["io=1; Domain=.github.io"])
        XCTAssertEqual(names(try cookieLine("http://localhost/echo")), ["self"])
        XCTAssertEqual(names(try cookieLine("http://a.localhost/echo")), [])
        XCTAssertEqual(names(try cookieLine("http://github.io/echo")), ["io"])
        XCTAssertEqual(names(try cookieLine("http://me.github.io/echo")), [])
        let stored = (HTTPCookieStorage.shared.cookies ?? []).filter { $0.name.hasPrefix(prefix) }.map(\.domain).sorted()
        XCTAssertEqual(stored, ["github.io", "localhost"], "stored for the host alone")
    }

    /// 127.0.0.1 and 127.5.0.1 reach one server (bound to every address): a cookie 127.0.0.1 sets for
    /// `0.1` (a suffix of both, but no domain) is ignored; one for 127.0.0.1 itself stays with it.
    func testAnIPAddressSetsCookiesForThatAddressAlone() throws {
        let both = try TestServer(host: "0.0.0.0")
        defer { both.shutdown() }
        let port = try XCTUnwrap(both.baseURL.port)
        try setCookies(from: "http://127.0.0.1:\(port)", ["bare=1; Domain=0.1", "dotted=1; Domain=.0.1",
                                                        "itself=1; Domain=127.0.0.1", "host=1"], recorder: both, proxied: false)
        XCTAssertEqual(names(try cookieLine("http://127.5.0.1:\(port)/echo", recorder: both, proxied: false)), [])
        XCTAssertEqual(names(try cookieLine("http://127.0.0.1:\(port)/echo", recorder: both, proxied: false)), ["host", "itself"])
        XCTAssertEqual(storedNames, ["host", "itself"])
    }

    /// RFC 6265bis: only a secure origin sets a `Secure` cookie; a plain-http one would otherwise
    /// plant it for the https site of the same host.
    func testASecureCookieFromPlainHTTPIsIgnored() throws {
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking Cookie Test Root")
        let secure = try TestServer(tls: try authority.issue())
        defer { secure.shutdown() }
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        try setCookies(from: server.baseURL.absoluteString, ["planted=1; Secure", "plain=1"], proxied: false)
        try setCookies(from: secure.baseURL.absoluteString, ["own=1; Secure"], recorder: secure, proxied: false, policy: policy)
        XCTAssertEqual(names(try cookieLine(secure.url("/echo").absoluteString, recorder: secure, proxied: false,
                                            policy: policy)), ["own", "plain"])
        XCTAssertEqual(storedNames, ["own", "plain"])
    }

    /// RFC 6265bis §5.6: a `Set-Cookie` with a control character other than tab anywhere (a bare CR in
    /// the value, NUL, DEL, CR in an attribute) is ignored whole; it could never come back in a
    /// `Cookie` line.
    func testASetCookieWithAControlCharacterIsIgnored() throws {
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
            + "Set-Cookie: \(prefix)cr=a\rInjected: yes\r\n"
            + "Set-Cookie: \(prefix)del=a\u{7F}b\r\n"
            + "Set-Cookie: \(prefix)attribute=a; Path=/\r; HttpOnly\r\n"
            + "Set-Cookie: \(prefix)tab=a\tb\r\n"
            + "Set-Cookie: \(prefix)ok=1\r\n\r\nok"
        let raw = try XCTUnwrap(RawServer(response))
        defer { raw.stop() }
        XCTAssertTrue(run(HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(raw.url)))).isSuccess)
        XCTAssertEqual(storedNames, ["ok", "tab"])
        XCTAssertEqual(names(try cookieLine(server.url("/echo").absoluteString, proxied: false)), ["ok", "tab"])
    }

    /// The library's acceptance where the wire cannot take it: IPv6 literals (the test server listens
    /// on IPv4), NUL (libcurl fails a response whose head carries one), and domains corelibs spells
    /// in its own way.
    func testAcceptanceForIPv6LiteralsNULAndEmptyDomains() throws {
        func accepted(_ line: String, from url: String) throws -> [String] {
            CookieAcceptance.acceptedCookies([line], from: try XCTUnwrap(URL(string: url))).map { "\($0.name)@\($0.domain)" }
        }
        XCTAssertEqual(try accepted("v6=1", from: "http://[::1]:8080/"), ["v6@::1"])
        XCTAssertEqual(try accepted("v6=1; Domain=::1", from: "http://[::1]:8080/"), ["v6@::1"], "the address alone")
        XCTAssertEqual(try accepted("v6=1; Domain=1", from: "http://[::1]:8080/"), [])
        XCTAssertEqual(try accepted("e=1; Domain=", from: "https://a.example.com/"), ["e@a.example.com"], "empty: host-only")
        XCTAssertEqual(try accepted("c=1; Domain=COM", from: "https://a.example.com/"), [])
        XCTAssertEqual(try accepted("x=1; Domain=example.com", from: "https://A.Example.COM/"), ["x@.example.com"])
        XCTAssertEqual(try accepted("nul=a\u{0}b", from: "https://a.example.com/"), [])
        XCTAssertEqual(try accepted("nul=1; Path=/\u{0}", from: "https://a.example.com/"), [])
        XCTAssertTrue(PublicSuffixList.isPublicSuffix("com"))
        XCTAssertTrue(PublicSuffixList.isPublicSuffix("co.uk"))
        XCTAssertTrue(PublicSuffixList.isPublicSuffix("test"))
        XCTAssertFalse(PublicSuffixList.isPublicSuffix("example.com"))
        XCTAssertFalse(PublicSuffixList.isPublicSuffix("example.test"))
        for address in ["127.0.0.1", "::1", "127.1", "0x7f.1", "2130706433", "example.123"] {
            XCTAssertTrue(PublicSuffixList.isIPAddress(address), address)
        }
        for name in ["localhost", "a.example.com", "0x.com", "1a.example"] {
            XCTAssertFalse(PublicSuffixList.isIPAddress(name), name)
        }
    }
}
