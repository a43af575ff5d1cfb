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
            && request.uppercasedMethod == "GET"
    }

    /// How the operation ends from the cache when its request asks for it: the cached response, or a
    /// failure when it may not load; `nil` when it goes to the network.
    func cachedOutcome(for request: URLRequest) -> TransferOutcome? {
        guard readsCache else { return nil }
        let cached = URLCache.shared.cachedResponse(for: request)
        if let cached {
            // A copy, not the cache entry's own storage: shared with the entry, the body's storage was
            // never freed (LeakSanitizer, CacheTests under `scripts/test --sanitize=address`).
            return .answeredFromCache(cached.response, cached.data.withUnsafeBytes { Data($0) })
        }
        guard request.cachePolicy == .returnCacheDataDontLoad else { return nil }
        return .failed(TransportError.make(.resourceUnavailable, "No cached response, and loading is not allowed.",
                                           url: request.url))
    }

    /// Stores a successful GET response when the operation opted into caching (a cache response
    /// block, or a request that reads the cache).
    func storeInCacheIfAllowed() {
        let (block, data) = state.withLock { state -> (CacheResponseBlock?, Data?) in
            guard state.configuration.cacheBlock != nil || readsCache, state.error == nil else { return (nil, nil) }
            return (state.configuration.cacheBlock, state.responseData)
        }
        guard let data, !isCancelled, let response = response as? HTTPURLResponse, response.statusCode == 200,
              request.uppercasedMethod == "GET",
              !(response.value(forHTTPHeaderField: "Cache-Control")?.lowercased().contains("no-store") ?? false) else {
            return
        }
        var cached: CachedURLResponse? = CachedURLResponse(response: response, data: data, storagePolicy: .allowed)
        if let block, let proposed = cached { cached = block(self, proposed) }
        if let cached { URLCache.shared.storeCachedResponse(cached, for: request) }
    }
}
