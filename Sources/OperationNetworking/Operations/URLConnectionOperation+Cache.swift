import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `URLCache.shared`, opt-in: an operation reads the cache when its request's `cachePolicy` is
/// `.returnCacheDataElseLoad` or `.returnCacheDataDontLoad`, and stores a successful GET response when
/// it has a cache response block or one of those policies. There is no implicit disk cache and no
/// HTTP freshness revalidation (`.useProtocolCachePolicy` loads from the network).
extension URLConnectionOperation {
    /// Whether `request` reads from the cache.
    static func readsCache(_ request: URLRequest) -> Bool {
        // The policy first: it rules out nearly every request without the method's uppercasing.
        let policy = request.cachePolicy
        return (policy == .returnCacheDataElseLoad || policy == .returnCacheDataDontLoad)
            && (request.httpMethod ?? "GET").uppercased() == "GET"
    }

    /// Ends the operation from the cache when the request asks for it; true when it did.
    func answerFromCache() -> Bool {
        guard readsCache else { return false }
        let request = self.request
        let cached = URLCache.shared.cachedResponse(for: request)
        guard cached != nil || request.cachePolicy == .returnCacheDataDontLoad else { return false }
        lock.withLock {
            if let cached {
                storedResponse = cached.response
                // A copy, not the cache entry's own storage: shared with the entry, the body's storage
                // was never freed (LeakSanitizer, CacheTests under `scripts/test --sanitize=address`;
                // storing and reading the same entry without an operation does not leak). One copy
                // per cache hit.
                storedResponseData = cached.data.withUnsafeBytes { Data($0) }
            } else {
                storedError = TransportError.make(.resourceUnavailable, "No cached response, and loading is not allowed.",
                                                  url: request.url)
            }
            _ = state.transferEnded()
        }
        willChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isExecuting")
        post(.operationDidStart)
        transferDidEnd()
        return true
    }

    /// Stores a successful GET response when the operation opted into caching.
    func storeInCacheIfAllowed() {
        let (block, data, error) = lock.withLock { (cacheBlock, storedResponseData, storedError) }
        guard error == nil, !isCancelled, block != nil || readsCache, let data,
              let response = response as? HTTPURLResponse, response.statusCode == 200,
              (request.httpMethod ?? "GET").uppercased() == "GET",
              !(response.value(forHTTPHeaderField: "Cache-Control")?.lowercased().contains("no-store") ?? false) else {
            return
        }
        var cached: CachedURLResponse? = CachedURLResponse(response: response, data: data, storagePolicy: .allowed)
        if let block, let proposed = cached { cached = block(self, proposed) }
        if let cached { URLCache.shared.storeCachedResponse(cached, for: request) }
    }
}
