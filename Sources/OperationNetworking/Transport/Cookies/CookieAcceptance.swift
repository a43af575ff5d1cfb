import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which cookies a response may store: RFC 6265 §5.3 (and RFC 6265bis where it is stricter) on top
/// of corelibs' `HTTPCookie.cookies(withResponseHeaderFields:for:)`, which parses a `Set-Cookie`
/// but stores whatever domain it names. A `Set-Cookie` is ignored when
/// - it carries a control character other than tab (CR, LF, NUL...) anywhere: in name, value or
///   attributes (RFC 6265bis §5.6), so no stored cookie can later break a `Cookie` line;
/// - its cookie is `Secure` and the response came over plain http (RFC 6265bis §5.7);
/// - its `Domain` does not domain-match the request's host (§5.1.3): a host never sets cookies for
///   a sibling or a parent's other children;
/// - its `Domain` is a public suffix (`com`, `co.uk`, any single label such as `test` or `localhost`;
///   see `PublicSuffixList`) other than the host itself; when it is the host, the cookie is stored for
///   that host alone (§5.3 step 5);
/// - the host is an IP address and `Domain` names anything but that address (127.0.0.1 cannot set a
///   cookie for `0.1`); naming the address itself stores a cookie for that address alone.
///
/// - Threading: pure functions; any thread.
enum CookieAcceptance {
    /// Stores in `storage` the cookies that `setCookieValues` (one response's `Set-Cookie` field
    /// values, each as received) may set for `url`.
    static func store(_ setCookieValues: [String], from url: URL, in storage: HTTPCookieStorage) {
        let cookies = acceptedCookies(setCookieValues, from: url)
        if !cookies.isEmpty {
            storage.setCookies(cookies, for: url, mainDocumentURL: nil)
        }
    }

    /// The cookies `setCookieValues` may set for `url`, scoped as stored.
    static func acceptedCookies(_ setCookieValues: [String], from url: URL) -> [HTTPCookie] {
        guard let host = url.host?.lowercased(), !host.isEmpty else { return [] }
        let isSecureScheme = url.scheme?.lowercased() == "https"
        var accepted: [HTTPCookie] = []
        for value in setCookieValues where !hasControlCharacter(value) {
            for cookie in HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": value], for: url) {
                if cookie.isSecure && !isSecureScheme { continue }
                if let scoped = scoped(cookie, host: host) { accepted.append(scoped) }
            }
        }
        return accepted
    }

    /// `cookie` as it may be stored for `host`, or `nil` when it must be ignored. Corelibs spells the
    /// domain it parsed as the host (no `Domain` attribute), the attribute with a dot in front (shared
    /// with subdomains), or an IPv4 attribute as given.
    static func scoped(_ cookie: HTTPCookie, host: String) -> HTTPCookie? {
        let domain = cookie.domain
        guard domain.hasPrefix(".") else { return domain == host ? cookie : nil }
        let claimed = String(domain.dropFirst())
        let hostIsIPAddress = PublicSuffixList.isIPAddress(host)
        // An empty Domain is no Domain (§5.2.3); the host's own name, when it cannot be shared, is
        // the host alone (§5.3 step 5).
        if claimed.isEmpty || (claimed == host && (hostIsIPAddress || PublicSuffixList.isPublicSuffix(claimed))) {
            return hostOnly(cookie, host: host)
        }
        // Otherwise the host must lie inside the domain (§5.1.3: never for an IP address), and the
        // domain must not be a public suffix.
        let inside = claimed == host || (!hostIsIPAddress && host.hasSuffix(domain))
        return inside && !PublicSuffixList.isPublicSuffix(claimed) ? cookie : nil
    }

    /// RFC 6265bis §5.6: a `Set-Cookie` with %x00-08, %x0A-1F or %x7F is ignored entirely.
    static func hasControlCharacter(_ value: String) -> Bool {
        value.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    /// `cookie` stored for `host` alone: corelibs matches a domain without a leading dot exactly.
    private static func hostOnly(_ cookie: HTTPCookie, host: String) -> HTTPCookie? {
        var properties: [HTTPCookiePropertyKey: Any] = [
            .name: cookie.name, .value: cookie.value, .path: cookie.path, .domain: host,
            .version: String(cookie.version), .discard: cookie.isSessionOnly ? "TRUE" : "FALSE",
        ]
        if cookie.isSecure { properties[.secure] = "TRUE" }
        if cookie.isHTTPOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
        if let expires = cookie.expiresDate { properties[.expires] = expires }
        if let comment = cookie.comment { properties[.comment] = comment }
        if let commentURL = cookie.commentURL { properties[.commentURL] = commentURL }
        if let ports = cookie.portList { properties[.port] = ports.map(\.stringValue).joined(separator: ",") }
        return HTTPCookie(properties: properties)
    }
}
