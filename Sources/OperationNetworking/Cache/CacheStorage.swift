// STAND-IN — replaced at merge by the `cachestore` branch's CacheStorage.swift, which has the same
// interface and keeps the entries in the URLCache on disk. This one keeps them in memory, per URLCache
// instance, by absolute URL, so that the cache logic and its tests run before the storage exists.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One stored response and what the cache needs to reuse it.
struct StoredResponse: Sendable {
    /// The stored response (final URL, status, header fields).
    var response: HTTPURLResponse
    var body: Data
    /// The request fields the response's `Vary` names, as sent (lowercased names), for RFC 9111 §4.1.
    var varyingRequestHeaders: [String: String]
    /// RFC 9111 §4.2.3 `request_time`.
    var requestTime: Date
    /// §4.2.3 `response_time`.
    var responseTime: Date
}

/// Stored responses in a `URLCache` (stand-in: in memory).
/// - Threading: any thread; the table is behind its own lock.
final class CacheStorage: Sendable {
    private let urlCache: URLCache

    init(_ urlCache: URLCache) {
        self.urlCache = urlCache
    }

    /// What is stored for the request's URL; `nil` on a miss.
    func storedResponse(for request: URLRequest) -> StoredResponse? {
        guard let url = request.url else { return nil }
        return StandInTable.shared.entries(of: urlCache)[url.absoluteString]
    }

    func store(_ stored: StoredResponse, for request: URLRequest) {
        guard let url = request.url else { return }
        StandInTable.shared.update(urlCache) { $0[url.absoluteString] = stored }
    }

    func removeStoredResponse(for url: URL) {
        StandInTable.shared.update(urlCache) { $0[url.absoluteString] = nil }
    }
}

/// The stand-in's entries, per live URLCache.
private final class StandInTable: Sendable {
    static let shared = StandInTable()

    private struct Caches {
        var byCache: [ObjectIdentifier: (cache: WeakCache, entries: [String: StoredResponse])] = [:]
    }

    private struct WeakCache: @unchecked Sendable {   // only compared by identity
        weak var cache: URLCache?
    }

    private let caches = Protected(Caches())

    func entries(of cache: URLCache) -> [String: StoredResponse] {
        caches.withLock { caches in
            guard let slot = caches.byCache[ObjectIdentifier(cache)], slot.cache.cache === cache else { return [:] }
            return slot.entries
        }
    }

    func update(_ cache: URLCache, _ change: (inout [String: StoredResponse]) -> Void) {
        caches.withLock { caches in
            let key = ObjectIdentifier(cache)
            var entries = caches.byCache[key].flatMap { $0.cache.cache === cache ? $0.entries : nil } ?? [:]
            change(&entries)
            caches.byCache[key] = (WeakCache(cache: cache), entries)
        }
    }
}
