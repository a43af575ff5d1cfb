import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The entries of one `URLCache`, each with the metadata RFC 9111 needs kept in its `userInfo`.
///
/// Everything goes through `URLCache`'s own three methods (`cachedResponse(for:)`,
/// `storeCachedResponse(_:for:)`, `removeCachedResponse(for:)`), so an app's own cache or subclass is
/// used as it is, and an app reading `URLCache.shared` itself finds what the operations stored.
///
/// corelibs' `URLCache` keys an entry by host, port and path alone: the query, the scheme and the method
/// are not part of it, so `/items?page=2` finds what `/items?page=1` stored. Each entry therefore records
/// the URL it was stored for, and a lookup answers only for that URL. Entries stored without this
/// metadata (by the app, or by a version of the library before it) are answered when their response's
/// URL is the request's; see `CacheEntryMetadata.foreign(_:)` for the times they get. An entry whose
/// metadata cannot be read is removed and reported as a miss.
///
/// A response larger than about 5 % of the cache's capacity is not stored (and the entry it would have
/// replaced is removed), as Apple's URL loading system does: corelibs' cache would otherwise evict every
/// other entry to make room for it.
///
/// - Threading: immutable after init; any thread. No lock is held around the cache. `URLCache` is
///   thread-safe: Apple documents it, and requires subclasses that override these methods to be as well;
///   corelibs keeps its memory cache under a lock and writes each disk entry atomically (8 threads
///   storing, reading and removing through one instance returned no wrong entry and no crash). A lock
///   here would be held while a subclass's override, which is app code, runs, and would queue every
///   operation's lookup behind one slow disk read.
final class CacheStorage: Sendable {
    /// The cache the entries live in.
    let urlCache: URLCache
    /// The same cache when it keeps the library's entries itself (`SQLiteURLCache`): read and written by
    /// key, without `CachedURLResponse` and the JSON of its `userInfo`.
    private let entryStore: EntryStore?

    init(_ urlCache: URLCache) {
        self.urlCache = urlCache
        entryStore = CacheStorage.entryStore(of: urlCache)
    }

    /// Whether the cache takes a body of `size` bytes, the one place that decides it: as Apple's URL
    /// loading does, not over about 5 % of the capacity (the larger of memory and disk), so one download
    /// cannot evict everything else; nothing without capacity. Asked before a run's plan is made (a body
    /// too large is not offered to the cache response block, and the entry it would replace is dropped)
    /// and by `store` of what it is handed (a cache response block may have made the body larger).
    func takes(bodyOfSize size: Int) -> Bool {
        CacheStorage.takes(bodyOfSize: size, memoryCapacity: urlCache.memoryCapacity, diskCapacity: urlCache.diskCapacity)
    }

    /// The rule of `takes(bodyOfSize:)` for a cache of these capacities.
    static func takes(bodyOfSize size: Int, memoryCapacity: Int, diskCapacity: Int) -> Bool {
        let capacity = max(memoryCapacity, diskCapacity)
        return capacity > 0 && size <= capacity / 20
    }

    /// Whether a store or a removal changes memory only, its files written later off the caller's
    /// thread: true for an `EntryStore` (as that protocol promises); false for a cache that writes its
    /// files in the call.
    var storesInMemoryFirst: Bool { entryStore != nil }

    /// `storesInMemoryFirst` of a storage over `cache`, without making one.
    static func storesInMemoryFirst(_ cache: URLCache) -> Bool { entryStore(of: cache) != nil }

    /// The cache as an `EntryStore`, when it is one (see `SQLiteURLCache.library(_:)`).
    static func entryStore(of cache: URLCache) -> EntryStore? {
        SQLiteURLCache.library(cache)
    }

    /// The entry stored for `request`'s URL, or `nil` on a miss or an entry whose metadata is damaged
    /// (that entry is removed).
    func storedResponse(for request: URLRequest) -> StoredResponse? {
        guard let url = request.url else { return nil }
        let key = CacheEntryMetadata.key(for: url)
        // The empty key stands for URLs that cannot be keyed without their user information: none is cached.
        guard !key.isEmpty else { return nil }
        if let entryStore {
            guard let entry = entryStore.entry(forKey: key) else { return nil }
            if case .damaged = entry.metadata {
                // Removed only if it is still the entry read: one stored meanwhile stays.
                entryStore.removeEntry(forKey: key, ifStoredAt: entry.storedAt)
                return nil
            }
            return stored(entry.url, entry.statusCode, entry.headers, entry.body, entry.metadata, key: key,
                          request: request, fields: entry.fields, facts: entry.facts, head: entry.head,
                          answeringHead: entry.answeringHead, place: StoredResponse.Place(key: key, storedAt: entry.storedAt))
        }
        guard let cached = urlCache.cachedResponse(for: request) else { return nil }
        guard let response = cached.response as? HTTPURLResponse, let responseURL = response.url else {
            urlCache.removeCachedResponse(for: request)
            return nil
        }
        // A copy, not the entry's own storage: shared with the entry, the body's storage was never freed
        // (LeakSanitizer, corelibs' disk cache).
        let body = cached.data.withUnsafeBytes { Data($0) }
        let metadata: SQLiteURLCache.Entry.MetadataReading
        switch CacheEntryMetadata.read(from: cached.userInfo) {
        case .found(let found): metadata = .found(found)
        case .absent: metadata = .absent
        case .damaged: metadata = .damaged(Data())
        }
        return stored(responseURL, response.statusCode, response.headerFields, body, metadata, key: key, request: request)
    }

    /// The stored response of an entry found under `key`, by what its metadata says.
    private func stored(_ url: URL, _ statusCode: Int, _ headers: [String: String], _ body: Data,
                        _ reading: SQLiteURLCache.Entry.MetadataReading, key: String, request: URLRequest,
                        fields: [String: String]? = nil, facts: FreshnessFacts? = nil,
                        head: ResponseHead? = nil, answeringHead: ResponseHead? = nil,
                        place: StoredResponse.Place? = nil) -> StoredResponse? {
        let metadata: CacheEntryMetadata
        switch reading {
        case .found(let found):
            metadata = found
        case .absent:
            // Not stored through this type: usable only when it is plainly the response to this URL.
            guard CacheEntryMetadata.key(for: url) == key else { return nil }
            metadata = .foreign(url)
        case .damaged:
            urlCache.removeCachedResponse(for: request)
            return nil
        }
        // Another URL's entry in the same slot (see the type's comment) is a miss, and stays: it is
        // still right for its own URL.
        guard metadata.requestURL == key else { return nil }
        return StoredResponse(url: url, statusCode: statusCode, headers: headers, body: body,
                              varyingRequestHeaders: metadata.varyingRequestHeaders, requestTime: metadata.requestTime,
                              responseTime: metadata.responseTime, trust: metadata.trust, fields: fields, facts: facts,
                              head: head, answeringHead: answeringHead, place: place)
    }

    private func remove(key: String, url: URL) {
        CacheStorage.remove(key: key, url: url, in: urlCache, entryStore: entryStore)
    }

    private static func remove(key: String, url: URL, in cache: URLCache, entryStore: EntryStore?) {
        if let entryStore { entryStore.removeEntry(forKey: key) } else { cache.removeCachedResponse(for: URLRequest(url: url)) }
    }

    /// Stores `stored` as the entry for `request`'s URL, replacing the one there (see `store(_:forURL:)`).
    func store(_ stored: StoredResponse, for request: URLRequest) {
        guard let url = request.url else { return }
        store(stored, forURL: url)
    }

    /// Stores `stored` as the entry for `url`, replacing the one there. A response too large for the
    /// cache (about 5 % of its capacity) is not stored, and the entry it replaces is removed. Neither the
    /// key nor the stored response's URL keeps a user name or password.
    ///
    /// Returns whether it is stored: `.stored` for a `URLCache` that stores at once; for the library's
    /// own store, which writes its file in batches, `.pending`, and `written` is told later, once the
    /// batch is written or failed (its stores are then gone); `.notStored` when it was not taken.
    @discardableResult
    func store(_ stored: StoredResponse, forURL url: URL,
               written: SQLiteURLCache.WriteReport? = nil) -> StoreOutcome {
        guard let bare = URLRedaction.removingUserInfo(from: url),
              let responseURL = URLRedaction.removingUserInfo(from: stored.url) else { return .notStored }
        let key = CacheEntryMetadata.key(for: bare)
        guard !key.isEmpty else { return .notStored }
        guard takes(bodyOfSize: stored.body.count) else {
            remove(key: key, url: bare)
            return .notStored
        }
        let metadata = CacheEntryMetadata(requestURL: key,
                                          varyingRequestHeaders: stored.varyingRequestHeaders,
                                          requestTime: stored.requestTime, responseTime: stored.responseTime,
                                          trust: stored.trust)
        if let entryStore {
            // Replaced in memory at once and in the file later, in one statement: a reader never misses it.
            entryStore.store(SQLiteURLCache.Entry(url: responseURL, statusCode: stored.statusCode, headers: stored.headers,
                                                  fields: stored.fields, facts: stored.facts, head: stored.head,
                                                  body: stored.body,
                                                  metadata: metadata, key: key,
                                                  storedAt: Date().timeIntervalSinceReferenceDate), forKey: key,
                             report: written)
            return .pending
        }
        guard let userInfo = try? metadata.userInfo(),
              let response = HTTPURLResponse(url: responseURL, statusCode: stored.statusCode, httpVersion: "HTTP/1.1",
                                             headerFields: stored.headers) else { return .notStored }
        let cached = CachedURLResponse(response: response, data: stored.body, userInfo: userInfo,
                                       storagePolicy: .allowed)
        // corelibs' disk store (and a subclass may inherit it) names the new file by the current second,
        // and when a damaged entry (a directory, say) holds that very name, its atomic write fails: there
        // the old entry goes first.
        let request = URLRequest(url: bare)
        urlCache.removeCachedResponse(for: request)
        urlCache.storeCachedResponse(cached, for: request)
        return .stored
    }

    /// Keeps the entry a response only repeats (`CacheState.Repeat`) as it is, used now, when the
    /// library's store still holds it where the run found it (`place`): `.stored` when the entry is in
    /// the file; `.pending` when it waits for its batch, the report `makeReport` makes (only then) told
    /// once it is written. `nil` when the store holds another entry there now, none, or the cache is not
    /// the library's: the response is then stored.
    func keepRepeated(at place: StoredResponse.Place, makeReport: () -> SQLiteURLCache.WriteReport?) -> StoreOutcome? {
        entryStore?.keepRepeated(forKey: place.key, storedAt: place.storedAt, makeReport: makeReport)
    }

    /// What a store did (see `store(_:forURL:written:)`).
    enum StoreOutcome: Equatable {
        case stored
        /// Taken, to be written with the next batch: its report tells.
        case pending
        case notStored
    }

    /// Removes the entry stored for `url` (RFC 9111 §4.4 invalidation).
    func removeStoredResponse(for url: URL) {
        CacheStorage.removeStoredResponses(for: [url], in: urlCache, entryStore: entryStore)
    }

    /// Removes the entries stored for `urls` in `cache` (an unsafe request's invalidation), without
    /// making a storage for it.
    static func removeStoredResponses(for urls: [URL], in cache: URLCache) {
        removeStoredResponses(for: urls, in: cache, entryStore: entryStore(of: cache))
    }

    private static func removeStoredResponses(for urls: [URL], in cache: URLCache, entryStore: EntryStore?) {
        for url in urls {
            let bare = URLRedaction.removingUserInfo(from: url) ?? url
            remove(key: CacheEntryMetadata.key(for: bare), url: bare, in: cache, entryStore: entryStore)
        }
    }
}

/// A cache that keeps the library's entries itself (`SQLiteURLCache`): `CacheStorage` reads and
/// writes them by key, decoded, instead of through `CachedURLResponse` and the JSON of its `userInfo`.
/// A store or a removal changes memory at once and reaches the cache's files later, off the caller's
/// thread (the store's `report` tells when): what `CacheStorage.storesInMemoryFirst` says of a cache
/// that conforms. `CacheStorage.entryStore(of:)` is the one place that finds it.
/// - Threading: any thread; the store keeps its entries behind locks of its own (see `SQLiteURLCache`).
protocol EntryStore: AnyObject, Sendable {
    /// The entry under `key`, or nil.
    func entry(forKey key: String) -> SQLiteURLCache.Entry?
    /// Stores `entry` under `key`, replacing what is there; `report` is told whether it reached the file.
    func store(_ entry: SQLiteURLCache.Entry, forKey key: String, report: SQLiteURLCache.WriteReport?)
    /// Keeps the entry under `key` as it is, used now, if it is the one stored at `storedAt` (a response
    /// repeats it): `.stored` when it is in the file; `.pending` when it waits for a batch, the report
    /// made by `makeReport` (called only then) told once it is written. `nil` when another entry or none
    /// is there.
    func keepRepeated(forKey key: String, storedAt: Double,
                      makeReport: () -> SQLiteURLCache.WriteReport?) -> CacheStorage.StoreOutcome?
    /// Removes the entry under `key`.
    func removeEntry(forKey key: String)
    /// Removes the entry under `key` if it is still the one stored at `storedAt` (a damaged one found
    /// by a read), in one hold of the store's lock.
    func removeEntry(forKey key: String, ifStoredAt storedAt: Double)
}

extension CacheStorage {
    /// The cache operations use when the app sets none: `URLCache.shared`, which the library replaces,
    /// once, at its first use, by an `SQLiteURLCache` unless the app has set one of its own.
    ///
    /// The rule: when `URLCache.shared` is still of corelibs' own class (`URLCache` itself, not a
    /// subclass), the library sets it to an `SQLiteURLCache` with Apple's documented capacities (4 MiB
    /// in memory, 20 MiB on disk) in `<cache home>/org.operationnetworking.URLCache/<process name>`, where
    /// the cache home is `$XDG_CACHE_HOME` when it is an absolute path, else `$HOME/.cache`, else the
    /// password database's home. An app that wants corelibs' cache, or its own, sets `URLCache.shared`
    /// to an instance of a subclass before the first operation starts, or sets the operation's
    /// `urlCache`. When the directory cannot be made, the cache keeps its entries in memory; when it is
    /// not the user's alone, none (`CacheFileSafety`). This is the one place the library chooses it.
    static func defaultShared() -> URLCache {
        _ = sharedCacheInstallation
        return URLCache.shared
    }

    /// Installs the library's shared cache, once (a static's initializer runs once, on first use,
    /// whichever thread gets there first).
    private static let sharedCacheInstallation: Void = {
        guard type(of: URLCache.shared) == URLCache.self else { return }
        URLCache.shared = SQLiteURLCache(memoryCapacity: 4 * 1024 * 1024, diskCapacity: 20 * 1024 * 1024,
                                         directory: sharedCacheDirectory)
    }()

    /// Where the library's shared cache keeps its database (see `SharedCacheLocation`: `$XDG_CACHE_HOME`,
    /// else `$HOME/.cache`, else the password database's home).
    static var sharedCacheDirectory: URL {
        SharedCacheLocation.directory(environment: ProcessInfo.processInfo.environment,
                                      processName: ProcessInfo.processInfo.processName)
    }
}
