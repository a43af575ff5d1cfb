import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import Synchronization
import XCTest

/// CacheStorage over SQLiteURLCache, the default shared cache: what an entry keeps, which URL it
/// answers, what it refuses, and eviction of the least recently used entries to the disk capacity. Each
/// read is from a new cache on the same directory, so from the database file.
final class SQLiteURLCacheTests: CacheDirectoryTestCase {
    /// Measured choices (bench/runs/cache-2026-12-07-round9.md): an entry is one object that the
    /// memory tier, the batch waiting to be written and every reader share (as a value, each hand-over
    /// retained each of its parts); `CacheStorage` stays an object (as a value, each copy retains the
    /// `SQLiteURLCache` twice); what the cache reads of a request and of a response is an object too (as
    /// values holding Foundation's `URL`, each copy and destroy went through generic witnesses).
    func testTheCachesEntriesAndRunValuesArePassedByReference() {
        // Asked of the metatypes at run time (a check the compiler settles would only warn).
        let types: [(Any.Type, String)] = [(SQLiteURLCache.Entry.self, "an entry"), (CacheStorage.self, "the storage view"),
                                           (CacheRequest.self, "the cache's request"),
                                           (CacheState.Received.self, "the received response")]
        for (type, name) in types {
            XCTAssertTrue(type is AnyClass, "\(name) became a value")
        }
    }

    /// A measured choice (bench/runs/cache-2026-12-08-round10.md): every request retains and releases
    /// the cache it uses, and a weak reference to an object gives it a side table, which sends each of
    /// those to the runtime's slow path. So nothing weak points at the cache:
    /// a scheduled write and the list written at exit hold its writer instead.
    func testTheCacheHasNoSideTableWhileAWriteIsScheduledOrAfterIt() {
        let cache = openSQLiteCache()
        let storage = CacheStorage(cache)
        storage.store(StoredResponses.article(), for: StoredResponses.request)
        XCTAssertFalse(hasSideTable(cache), "a write scheduled refers to the cache weakly")
        cache.flush()
        XCTAssertFalse(hasSideTable(cache))
        // The check itself: a weak reference makes a side table.
        let other = openSQLiteCache()
        weak let weakOther = other
        XCTAssertTrue(hasSideTable(other))
        XCTAssertNotNil(weakOther)
    }

    /// The write a cache's `deinit` makes waits for a batch under way, unless it runs on the writer's own
    /// queue: there, a write's report may hold the last reference to the cache, and waiting would never end.
    func testACacheLastHeldByAWriteReportIsWrittenWithoutWaitingForItself() throws {
        let holder = Protected<SQLiteURLCache?>(openSQLiteCache())
        let storageDropped = DispatchSemaphore(value: 0)
        let released = expectation(description: "the report released the cache")
        do {
            let storage = try XCTUnwrap(holder.withLock { $0.map(CacheStorage.init) })
            storage.store(StoredResponses.article(), forURL: try XCTUnwrap(StoredResponses.request.url)) { _ in
                // On the writer's queue, once the storage is gone: this holder's is the last reference.
                storageDropped.wait()
                let last = holder.withLock { held in
                    defer { held = nil }
                    return held
                }
                withExtendedLifetime(last) {}
                released.fulfill()
            }
        }
        storageDropped.signal()
        wait(for: [released], timeout: 10)
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    /// Whether the Swift runtime gave `object` a side table: on 64-bit platforms, the two top bits of the
    /// reference count word that follows the object's metadata pointer.
    private func hasSideTable(_ object: AnyObject) -> Bool {
        let word = Unmanaged.passUnretained(object).toOpaque()
            .load(fromByteOffset: MemoryLayout<UInt>.size, as: UInt64.self)
        return word >> 62 == 0b11
    }

    /// A file an earlier version wrote holds an index on access time that nothing reads (each store and
    /// each use written kept it up to date): its entries stay, and the index goes.
    func testAFileOfAnEarlierVersionKeepsItsEntriesAndLosesItsUnusedIndex() throws {
        let storage = openSQLiteStorage()
        storage.store(StoredResponses.article(), for: StoredResponses.request)
        flush(storage)
        let file = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000)
        try file.run("CREATE INDEX entries_by_access ON entries (accessed_at)")
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
        XCTAssertEqual(try file.run("SELECT name FROM sqlite_schema ORDER BY name"),
                       [[.text("entries")], [.text("sqlite_autoindex_entries_1")]])
    }

    func testEveryFieldComesBackFromTheFile() {
        let article = StoredResponses.article()
        openSQLiteStorage().store(article, for: StoredResponses.request)
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), article)
        XCTAssertEqual(try directoryContents().map(\.lastPathComponent).filter { !$0.hasPrefix(SQLiteURLCache.fileName) }, [])
    }

    func testEachQueryAndSchemeIsAnEntryOfItsOwnAndTheFragmentIsNot() throws {
        let variants = ["http://127.0.0.1:9/items?page=1", "http://127.0.0.1:9/items?page=2", "http://127.0.0.1:9/items",
                        "https://127.0.0.1:9/items?page=1"]
        let urls = try variants.map { try XCTUnwrap(URL(string: $0)) }
        for url in urls {
            openSQLiteStorage().store(StoredResponses.named(url), for: URLRequest(url: url))
        }
        let cache = openSQLiteCache()
        for url in urls {
            // Straight from the cache, without CacheStorage's check of the URL it was stored for.
            XCTAssertEqual(cache.cachedResponse(for: URLRequest(url: url))?.data, StoredResponses.named(url).body, "\(url)")
        }
        for same in ["http://127.0.0.1:9/items?page=1#top", "HTTP://127.0.0.1:9/items?page=1"] {
            XCTAssertEqual(cache.cachedResponse(for: URLRequest(url: try XCTUnwrap(URL(string: same))))?.data,
                           StoredResponses.named(urls[0]).body, same)
        }
        // A host name in capitals too (an address has no case to test it with).
        let named = try XCTUnwrap(URL(string: "http://example.test:9/items"))
        openSQLiteStorage().store(StoredResponses.named(named), for: URLRequest(url: named))
        XCTAssertEqual(openSQLiteCache().cachedResponse(for: URLRequest(url: try XCTUnwrap(URL(string: "http://Example.TEST:9/items"))))?.data,
                       StoredResponses.named(named).body)
        cache.removeCachedResponse(for: URLRequest(url: urls[1]))
        cache.flush()
        XCTAssertNil(openSQLiteCache().cachedResponse(for: URLRequest(url: urls[1])))
        XCTAssertNotNil(openSQLiteCache().cachedResponse(for: URLRequest(url: urls[0])))
    }

    func testOnlyTheLibrarysMetadataIsKeptOfUserInfoAndOnlyResponsesAllowedOnDisk() throws {
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/policy"))
        let response = try XCTUnwrap(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:]))
        let userInfo: [AnyHashable: Any] = [CacheEntryMetadata.userInfoKey: Data("{}".utf8), "app": "value"]
        openSQLiteCache().storeCachedResponse(CachedURLResponse(response: response, data: Data("a".utf8), userInfo: userInfo,
                                                                storagePolicy: .allowed), for: URLRequest(url: url))
        let read = try XCTUnwrap(openSQLiteCache().cachedResponse(for: URLRequest(url: url)))
        XCTAssertEqual(read.userInfo?.count, 1)
        XCTAssertEqual(read.userInfo?[CacheEntryMetadata.userInfoKey] as? Data, Data("{}".utf8))
        for policy in [URLCache.StoragePolicy.allowedInMemoryOnly, .notAllowed] {
            let other = try XCTUnwrap(URL(string: "http://127.0.0.1:9/policy/\(policy.rawValue)"))
            let cached = CachedURLResponse(response: response, data: Data("b".utf8), userInfo: nil, storagePolicy: policy)
            let cache = openSQLiteCache()
            cache.storeCachedResponse(cached, for: URLRequest(url: other))
            XCTAssertNil(cache.cachedResponse(for: URLRequest(url: other)), "\(policy)")
        }
    }

    func testAnEntryWhoseMetadataCannotBeReadIsAMissAndRemoved() throws {
        let url = try XCTUnwrap(StoredResponses.request.url)
        let response = try XCTUnwrap(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:]))
        let cached = CachedURLResponse(response: response, data: Data("body".utf8),
                                       userInfo: [CacheEntryMetadata.userInfoKey: Data("[1, 2]".utf8)], storagePolicy: .allowed)
        openSQLiteCache().storeCachedResponse(cached, for: StoredResponses.request)
        XCTAssertNotNil(openSQLiteCache().cachedResponse(for: StoredResponses.request))
        XCTAssertNil(openSQLiteStorage().storedResponse(for: StoredResponses.request))
        XCTAssertNil(openSQLiteCache().cachedResponse(for: StoredResponses.request), "not removed")
    }

    func testABodyOverAbout5PercentOfTheCapacityIsNotStoredAndDropsTheOldEntry() throws {
        let capacity = 200_000
        let url = try XCTUnwrap(StoredResponses.request.url)
        let storage = { self.openSQLiteStorage(diskCapacity: capacity) }
        storage().store(StoredResponses.named(url, bodySize: capacity / 20), for: StoredResponses.request)
        XCTAssertEqual(storage().storedResponse(for: StoredResponses.request)?.body.count, capacity / 20)
        storage().store(StoredResponses.named(url, bodySize: capacity / 20 + 1), for: StoredResponses.request)
        XCTAssertNil(storage().storedResponse(for: StoredResponses.request))
    }

    func testTheEntriesStayWithinTheCapacityAndTheLeastRecentlyUsedGoFirst() throws {
        let capacity = 100_000
        let urls = try (0..<60).map { try XCTUnwrap(URL(string: "http://127.0.0.1:9/evict/\($0)")) }
        for (index, url) in urls.enumerated() {
            openSQLiteStorage(diskCapacity: capacity).store(StoredResponses.named(url, bodySize: capacity / 20),
                                                            for: URLRequest(url: url))
            XCTAssertLessThanOrEqual(openSQLiteCache(diskCapacity: capacity).currentDiskUsage, capacity, "after \(index + 1)")
            // The first entry is read after every store: always the most recently used but one.
            XCTAssertNotNil(openSQLiteStorage(diskCapacity: capacity).storedResponse(for: URLRequest(url: urls[0])),
                            "after \(index + 1)")
        }
        let storage = openSQLiteStorage(diskCapacity: capacity)
        let kept = urls.filter { storage.storedResponse(for: URLRequest(url: $0)) != nil }
        // The first, read all along, and the newest, in the order they were stored.
        XCTAssertEqual(kept.first, urls[0])
        XCTAssertEqual(Array(kept.dropFirst()), Array(urls.suffix(kept.count - 1)))
        XCTAssertGreaterThan(kept.count, 10)
        XCTAssertLessThan(kept.count, 21)
        // A smaller capacity set later evicts at once.
        let cache = openSQLiteCache(diskCapacity: capacity)
        cache.diskCapacity = capacity / 4
        cache.flush()
        XCTAssertLessThanOrEqual(openSQLiteCache().currentDiskUsage, capacity / 4)
        XCTAssertGreaterThan(openSQLiteCache().currentDiskUsage, 0)
        cache.removeAllCachedResponses()
        cache.flush()
        XCTAssertEqual(openSQLiteCache().currentDiskUsage, 0)
    }

    func testEightThreadsStoringReadingAndRemovingGetOnlyTheirURLsEntries() throws {
        try assertConcurrentUseKeepsEntriesApart(openSQLiteStorage(diskCapacity: 4 << 20), steps: 60) { self.openSQLiteStorage() }
    }

    func testEightThreadsEachReadBackWhatTheyStoredAndNothingTheyRemoved() {
        assertConcurrentUseDropsNothing(openSQLiteStorage(diskCapacity: 4 << 20), steps: 60)
    }

    func testAnEntryBeingReplacedIsNeverMissingForAReader() {
        let storage = openSQLiteStorage()
        let request = StoredResponses.request
        storage.store(StoredResponses.article(), for: request)
        let readerStarted = Atomic<Bool>(false)
        let writing = Atomic<Bool>(true)
        // A thread of its own writes while this one reads; it starts once the reader runs.
        Thread {
            while !readerStarted.load(ordering: .acquiring) {}
            for _ in 0..<400 { storage.store(StoredResponses.article(), for: request) }
            writing.store(false, ordering: .releasing)
        }.start()
        readerStarted.store(true, ordering: .releasing)
        var reads = 0
        var misses = 0
        while writing.load(ordering: .acquiring) {
            reads += 1
            if storage.storedResponse(for: request) == nil { misses += 1 }
        }
        XCTAssertGreaterThan(reads, 0)
        XCTAssertEqual(misses, 0, "\(misses) of \(reads) reads missed an entry that was only being replaced")
    }

    func testAFileOfAnEarlierLayoutIsEmptiedAndGivenThisOne() throws {
        // Version 1's table: no checksum column.
        let earlier = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000)
        try earlier.run("""
            CREATE TABLE entries (
                key TEXT PRIMARY KEY NOT NULL, response_url TEXT NOT NULL, status INTEGER NOT NULL,
                header_fields BLOB NOT NULL, body BLOB NOT NULL, metadata BLOB, size INTEGER NOT NULL,
                stored_at REAL NOT NULL, accessed_at REAL NOT NULL)
            """)
        let key = CacheEntryMetadata.key(for: try XCTUnwrap(StoredResponses.request.url))
        try earlier.run("INSERT INTO entries VALUES (?, 'http://127.0.0.1:9/old', 200, CAST('{}' AS BLOB), x'00', NULL, 1, 0, 0)",
                        [.text(key)])
        try earlier.run("PRAGMA user_version = 1")

        XCTAssertNil(openSQLiteCache().cachedResponse(for: StoredResponses.request))
        openSQLiteStorage().store(StoredResponses.article(), for: StoredResponses.request)
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    func testADirectoryThatCannotBeMadeKeepsTheEntriesInMemory() throws {
        let blocker = directory.appendingPathComponent("a-file")
        try Data("not a directory".utf8).write(to: blocker)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: blocker.appendingPathComponent("cache"))
        let storage = CacheStorage(cache)
        storage.store(StoredResponses.article(), for: StoredResponses.request)
        StoredResponses.assertEqual(storage.storedResponse(for: StoredResponses.request), StoredResponses.article())
    }
}
