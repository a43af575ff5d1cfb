import CPsl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which stored cookies a request carries: RFC 6265 §5.4 on top of the domain matching corelibs'
/// `HTTPCookieStorage.cookies(for:)` does. Corelibs matches the domain only, and by suffix even for
/// an IP address; without this a `Secure` cookie would go over plain http, a `Path=/account` cookie to
/// every path of its host, and a cookie stored for `.0.1` from 127.0.0.1 to 127.5.0.1.
///
/// The storage is the process's, shared with anything else that writes to it (corelibs' `URLSession`
/// stores what a response sets without `CookieAcceptance`'s rules), so the domain rules are applied
/// again here: a cookie for a public suffix goes only to that exact host, one for an IP address only
/// to that address.
enum CookieScope {
    /// The cookies of `storage` that a request to `url` sends, at `now`.
    static func cookies(in storage: HTTPCookieStorage, for url: URL, now: Date = Date()) -> [HTTPCookie] {
        guard let candidates = storage.cookies(for: url), !candidates.isEmpty,
              let host = url.host?.lowercased() else { return [] }
        let isSecureScheme = url.scheme?.lowercased() == "https"
        let requestPath = url.path.isEmpty ? "/" : url.path
        let hostIsIPAddress = PublicSuffixList.isIPAddress(host)
        return candidates.filter { cookie in
            if cookie.isSecure && !isSecureScheme { return false }
            if let expiry = cookie.expiresDate, expiry <= now { return false }
            return domainAllows(cookie.domain, host: host, hostIsIPAddress: hostIsIPAddress)
                && pathMatches(cookiePath: cookie.path, requestPath: requestPath)
        }
    }

    /// The `Cookie` header's value for a request to `url`, `nil` when no cookie goes. It passes the
    /// check every request header passes (no CR, LF or NUL): a stored cookie whose name or value
    /// carries one (put there through the storage's own API; responses cannot set one) is left out
    /// and the request goes with the others, never with a line the cookie made up.
    static func headerValue(in storage: HTTPCookieStorage, for url: URL) -> String? {
        var cookies = cookies(in: storage, for: url)
        guard let value = line(for: cookies) else { return nil }
        if Transfer.isValidHeader(name: "Cookie", value: value) { return value }
        cookies.removeAll {
            !Transfer.isValidHeader(name: "Cookie", value: $0.name) || !Transfer.isValidHeader(name: "Cookie", value: $0.value)
        }
        return line(for: cookies).flatMap { Transfer.isValidHeader(name: "Cookie", value: $0) ? $0 : nil }
    }

    /// `name=value; name=value`, or `nil` for no cookie.
    private static func line(for cookies: [HTTPCookie]) -> String? {
        cookies.isEmpty ? nil : HTTPCookie.requestHeaderFields(with: cookies)["Cookie"]
    }

    /// Whether a cookie stored for `domain` (corelibs' spelling: a leading dot for a cookie shared with
    /// subdomains) may go to `host`, which corelibs already found to match it. A host-only cookie
    /// matched exactly; a shared one may not be shared from an IP address or a public suffix.
    static func domainAllows(_ domain: String, host: String, hostIsIPAddress: Bool) -> Bool {
        guard domain.hasPrefix(".") else { return true }
        let shared = domain.dropFirst()
        if shared == host { return true }
        return !hostIsIPAddress && !PublicSuffixList.isPublicSuffix(String(shared))
    }

    /// RFC 6265 §5.1.4: the paths are equal, or the cookie's path is a prefix of the request's that
    /// ends in "/" or is followed by "/" in it.
    static func pathMatches(cookiePath: String, requestPath: String) -> Bool {
        let cookiePath = cookiePath.isEmpty ? "/" : cookiePath
        if cookiePath == requestPath { return true }
        guard requestPath.hasPrefix(cookiePath) else { return false }
        if cookiePath.hasSuffix("/") { return true }
        return requestPath.utf8.dropFirst(cookiePath.utf8.count).first == UInt8(ascii: "/")
    }
}

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

/// Public suffixes (`com`, `co.uk`, `github.io`) and IP literals, for cookie scoping (RFC 6265 §5.3
/// steps 5 and 6): a cookie may name neither as a domain it is shared across.
///
/// The list is libpsl's (the library libcurl links): `psl_latest` picks the newer of the copy built
/// into libpsl and the system's (`/usr/share/publicsuffix`, Debian's `publicsuffix` package). The
/// list's implicit `*` rule counts too, so every single-label name (`test`, `localhost`, an unknown
/// top-level domain) is a public suffix. Without any list every domain is taken for one: no cookie
/// is then shared beyond the host that set it.
/// - Threading: the list is loaded once and only read after; any thread.
enum PublicSuffixList {
    /// libpsl's context, never freed: it lives as long as the process.
    /// - Threading: made once (`context`), then only read, by libpsl (which is thread-safe); any thread.
    private final class Context: @unchecked Sendable {   // set once at init, only read by libpsl after
        let raw: OpaquePointer?

        init() {
            raw = psl_latest(nil) ?? psl_builtin()
        }
    }

    private static let context = Context()

    /// Whether `domain` (lower case, no leading dot) is a public suffix: on the list, under one of
    /// its wildcard rules, or a single label.
    static func isPublicSuffix(_ domain: String) -> Bool {
        guard domain.utf8.contains(UInt8(ascii: ".")), let raw = context.raw else { return true }
        return psl_is_public_suffix2(raw, domain, Int32(PSL_TYPE_ANY)) != 0
    }

    /// Whether `host` is an IP address rather than a name: an IPv6 literal (with or without its
    /// brackets), or a host whose last label is a number, as URL parsers read IPv4 (`127.1`,
    /// `0x7f.1` and `2130706433` all reach 127.0.0.1).
    static func isIPAddress(_ host: String) -> Bool {
        if host.utf8.contains(UInt8(ascii: ":")) { return true }   // only IPv6 literals have colons
        var label = Substring(host)
        if label.hasSuffix(".") { label = label.dropLast() }
        if let dot = label.lastIndex(of: ".") { label = label[label.index(after: dot)...] }
        guard !label.isEmpty else { return false }
        if label.allSatisfy({ $0.isASCII && $0.isNumber }) { return true }
        let lowered = label.lowercased()
        return lowered.hasPrefix("0x") && lowered.dropFirst(2).allSatisfy { $0.isHexDigit && $0.isASCII }
    }
}
