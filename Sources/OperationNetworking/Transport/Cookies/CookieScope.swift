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
