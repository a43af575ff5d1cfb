import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the cache needs to know of a request: its URL, method, policy, directives and the header
/// fields it goes out with.
/// - Threading: an immutable value.
struct CacheRequest: Sendable {
    /// The request's URL (the cache's primary key, §2).
    let url: URL
    /// The method in upper case.
    let method: String
    let policy: URLRequest.CachePolicy
    /// The request's `Cache-Control` directives; `Pragma: no-cache` counts as `no-cache` when the
    /// request has no `Cache-Control` (RFC 7234 §5.4, kept by RFC 9111 for old clients).
    let control: CacheControl
    /// The header fields as the transfer sends them, by lowercased name: the request's own, plus the
    /// `Accept-Encoding` the library adds when the request has none (a response's `Vary` names it often).
    let headers: [String: String]
    /// The trust identity of the operation's security policy (`CacheTrust`): an `https` entry answers
    /// only the identity it was fetched under, and a response is stored under this one.
    var trust = CacheTrust.system
    /// The operation's `maximumResponseSize`: a stored body larger than it answers nothing (the network
    /// would have refused it).
    var maximumBodySize: Int64? = nil
    /// Whether a stale response within its `stale-while-revalidate` window may answer while a run of the
    /// library's own revalidates it: only for an operation whose revalidation runs no code of the app's
    /// (set by the operation's lookup; see `BackgroundRevalidation`).
    var mayRevalidateInBackground = false

    /// The request's fields that make it a partial or conditional request of the caller's own: the
    /// cache stays out of those (their answers, 206 and 304, are the caller's to handle).
    static let callerPreconditions: Set<String> = ["range", "if-range", "if-none-match", "if-modified-since",
                                                   "if-match", "if-unmodified-since"]

    /// Methods whose response may be stored and reused (§2: GET; HEAD is left out, since its empty body
    /// would answer a later GET of the same URL).
    static let cacheableMethods: Set<String> = ["GET"]

    /// Methods that do not change the resource (RFC 9110 §9.2.1); every other one invalidates (§4.4).
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    init?(_ request: URLRequest) {
        guard let url = request.url else { return nil }
        self.url = url
        method = request.uppercasedMethod
        policy = request.cachePolicy
        var headers: [String: String] = [:]
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            headers[asciiLowercased(name)] = value
        }
        if headers["accept-encoding"] == nil { headers["accept-encoding"] = Transfer.offeredEncodings }
        self.headers = headers
        usesCache = CacheRequest.cacheUsable(method: method, headers: headers, url: url)
        if let field = headers["cache-control"] {
            control = CacheControl(field)
        } else if let pragma = headers["pragma"],
                  CacheControl.listMembers(pragma).contains(where: { asciiLowercased($0) == "no-cache" }) {
            control = CacheControl("no-cache")
        } else {
            control = .empty
        }
    }

    /// Whether the request may be answered from the cache and its response stored: a GET the caller
    /// did not make partial or conditional, nor addressed to another host with a `Host` field of its own
    /// (the cache's key is the URL, so two virtual hosts behind one address would share an entry).
    /// Decided once, when the request is read: the cache asks it several times a run.
    let usesCache: Bool

    private static func cacheUsable(method: String, headers: [String: String], url: URL) -> Bool {
        cacheableMethods.contains(method) && !headers.keys.contains { callerPreconditions.contains($0) }
            && !namesAnotherHost(headers: headers, url: url)
    }

    /// Whether the request's own `Host` field names something other than its URL's authority.
    private static func namesAnotherHost(headers: [String: String], url: URL) -> Bool {
        guard let field = headers["host"] else { return false }
        let named = asciiLowercased(CacheControl.trimmingOWS(field))
        guard let host = url.host.map(asciiLowercased) else { return true }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        var authorities = [bracketed]
        if let port = url.port { authorities.append("\(bracketed):\(port)") }
        return !authorities.contains(named)
    }

    /// Whether the request's policy reads stored responses at all (every policy but the ones that
    /// reload ignoring them), for a request that `usesCache`: the storage is read only then.
    var readsStoredResponses: Bool {
        guard usesCache else { return false }
        switch policy {
        case .useProtocolCachePolicy, .returnCacheDataElseLoad, .returnCacheDataDontLoad, .reloadRevalidatingCacheData:
            return true
        default:
            return false
        }
    }

    /// Whether the request's method is unsafe, so that its success invalidates stored responses.
    var isUnsafe: Bool { !CacheRequest.safeMethods.contains(method) }

    /// Whether the request carries credentials of its own (§3.5): an `Authorization` field, or a user
    /// name or password in its URL (which libcurl sends as one).
    var hasAuthorization: Bool { headers["authorization"] != nil || url.user != nil || url.password != nil }
}
