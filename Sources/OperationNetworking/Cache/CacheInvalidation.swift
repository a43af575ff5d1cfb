import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the cache keeps of a run whose method is unsafe (RFC 9111 §4.4): only the URL its success
/// invalidates. The cache is neither read for such a request nor given its response, so nothing else
/// of the request is read when it starts, no `CacheState` is made for it, and its metrics say
/// `.notConsulted`; at its end the few URLs it invalidates are dropped from the storage.
/// - Threading: an immutable value.
struct CacheInvalidation: Sendable {
    /// The request's URL (the target URI).
    let target: URL

    /// The invalidation `request` makes when it succeeds; `nil` for a request without a URL or of a safe
    /// method, which changes nothing.
    init?(_ request: URLRequest) {
        guard CacheInvalidation.isUnsafe(request.httpMethod), let url = request.url else { return nil }
        target = url
    }

    /// Whether `method` (`nil`: GET) is unsafe: not one of `CacheRequest.safeMethods`, in any case.
    /// Every GET asks it: the usual spellings are settled without making an upper-case copy.
    static func isUnsafe(_ method: String?) -> Bool {
        switch method {
        case nil, "GET", "HEAD", "OPTIONS", "TRACE": return false
        case "POST", "PUT", "PATCH", "DELETE": return true
        case let method?: return !CacheRequest.safeMethods.contains(Transfer.uppercasedMethod(method))
        }
    }

    /// The URLs whose stored responses a response of `status` invalidates: after a non-error status,
    /// the target URI (and where a redirect took it, `finalURL`), and the `Location` and
    /// `Content-Location` within the origin of the response that names them (after a redirect, the
    /// final URL's: a server may not invalidate another origin's entries). `field` reads the response's
    /// fields by lowercased name; only those two are read.
    func invalidatedURLs(status: Int, finalURL: URL?, field: (String) -> String?) -> [URL] {
        guard (200...399).contains(status) else { return [] }
        var urls = [target]
        if let finalURL, finalURL != target { urls.append(finalURL) }
        let base = finalURL ?? target
        for name in CacheInvalidation.targetFields {
            guard let value = field(name), let named = URL(string: value, relativeTo: base)?.absoluteURL,
                  Transfer.sameOrigin(named, base), !urls.contains(named) else { continue }
            urls.append(named)
        }
        return urls
    }

    /// The response fields that name more URLs to invalidate, by lowercased name.
    private static let targetFields = ["location", "content-location"]
}
