import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which stored cookies a request carries: RFC 6265 §5.4 on top of the domain matching corelibs'
/// `HTTPCookieStorage.cookies(for:)` does. Corelibs matches the domain only, so without this a
/// `Secure` cookie would go over plain http and a `Path=/account` cookie to every path of its host.
enum CookieScope {
    /// The cookies of `storage` that a request to `url` sends, at `now`.
    static func cookies(in storage: HTTPCookieStorage, for url: URL, now: Date = Date()) -> [HTTPCookie] {
        guard let candidates = storage.cookies(for: url), !candidates.isEmpty else { return [] }
        let isSecureScheme = url.scheme?.lowercased() == "https"
        let requestPath = url.path.isEmpty ? "/" : url.path
        return candidates.filter { cookie in
            if cookie.isSecure && !isSecureScheme { return false }
            if let expiry = cookie.expiresDate, expiry <= now { return false }
            return pathMatches(cookiePath: cookie.path, requestPath: requestPath)
        }
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
