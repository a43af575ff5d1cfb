import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// A test with a cache directory of its own, removed after it, and `URLCache`s opened on it.
class CacheDirectoryTestCase: LibraryTestCase {
    private(set) var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    /// A new `URLCache` on the test's directory. With no memory capacity (the default) every read
    /// comes from the files, as in a new process: corelibs keeps no state shared between instances
    /// but the directory.
    func openCache(memoryCapacity: Int = 0, diskCapacity: Int = 20 << 20) -> URLCache {
        URLCache(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity, diskPath: directory.path)
    }

    /// Writes to the file what `storage`'s cache has only in memory so far (as the end of its process
    /// would): another instance on the directory reads the file.
    func flush(_ storage: CacheStorage) {
        (storage.urlCache as? SQLiteURLCache)?.flush()
    }

    /// A storage on a new `URLCache` on the test's directory.
    func openStorage(memoryCapacity: Int = 0, diskCapacity: Int = 20 << 20) -> CacheStorage {
        CacheStorage(openCache(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity))
    }

    /// A new `SQLiteURLCache` on the test's directory: it keeps no memory layer, so every read comes
    /// from the database file.
    func openSQLiteCache(diskCapacity: Int = 20 << 20) -> SQLiteURLCache {
        SQLiteURLCache(memoryCapacity: 0, diskCapacity: diskCapacity, directory: directory)
    }

    /// A storage on a new `SQLiteURLCache` on the test's directory.
    func openSQLiteStorage(diskCapacity: Int = 20 << 20) -> CacheStorage {
        CacheStorage(openSQLiteCache(diskCapacity: diskCapacity))
    }

    /// The database file of the `SQLiteURLCache`s on the test's directory.
    var databaseFile: URL { directory.appendingPathComponent(SQLiteURLCache.fileName) }

    /// Everything in the test's directory, sorted.
    func directoryContents() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// The bytes all files in the test's directory take.
    func directorySize() throws -> Int {
        try directoryContents().reduce(0) { total, file in
            total + ((try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0)
        }
    }

    /// Eight threads store, read and remove twelve URLs' entries through `storage` at once: every read
    /// that finds an entry finds its own URL's (body, secondary key, response URL), some reads find one,
    /// and afterwards a store is read back through `reopen()`.
    func assertConcurrentUseKeepsEntriesApart(_ storage: CacheStorage, steps: Int, reopen: () -> CacheStorage,
                                              file: StaticString = #filePath, line: UInt = #line) throws {
        let urls = try (0..<12).map { try XCTUnwrap(URL(string: "http://127.0.0.1:9/shared/\($0 % 4)?variant=\($0)")) }
        let reads = Protected((hits: 0, wrong: [URL]()))
        // Every URL stored first: a thread never reads a URL it stored itself, so without these the
        // reads could all miss when the threads happen to run one after another (nothing to check).
        for url in urls { storage.store(StoredResponses.named(url, bodySize: 2_000), for: URLRequest(url: url)) }
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for step in 0..<steps {
                let url = urls[(step * 5 + thread) % urls.count]
                let expected = StoredResponses.named(url, bodySize: 2_000)
                switch (step + thread) % 3 {
                case 0:
                    storage.store(expected, for: URLRequest(url: url))
                case 1:
                    guard let stored = storage.storedResponse(for: URLRequest(url: url)) else { break }
                    let right = stored.body == expected.body && stored.varyingRequestHeaders == expected.varyingRequestHeaders
                        && stored.url == url
                    reads.withLock { right ? ($0.hits += 1) : $0.wrong.append(url) }
                default:
                    storage.removeStoredResponse(for: url)
                }
            }
        }
        XCTAssertEqual(reads.value.wrong, [], file: file, line: line)
        XCTAssertGreaterThan(reads.value.hits, 0, file: file, line: line)
        // Whatever the interleaving left, a later store and read still work.
        storage.store(StoredResponses.named(urls[0]), for: URLRequest(url: urls[0]))
        flush(storage)
        XCTAssertEqual(reopen().storedResponse(for: URLRequest(url: urls[0]))?.body, StoredResponses.named(urls[0]).body,
                       file: file, line: line)
    }

    /// Eight threads at once, each on URLs no other thread uses, store an entry and read it straight
    /// back, then remove it and read again: every read after a store finds that entry and every read
    /// after a removal misses, so nothing is dropped or kept silently under concurrent use.
    func assertConcurrentUseDropsNothing(_ storage: CacheStorage, steps: Int,
                                         file: StaticString = #filePath, line: UInt = #line) {
        let failures = Protected([String]())
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for step in 0..<steps {
                guard let url = URL(string: "http://127.0.0.1:9/own/\(thread)/\(step % 3)?step=\(step)") else { continue }
                let expected = StoredResponses.named(url, bodySize: 2_000)
                storage.store(expected, for: URLRequest(url: url))
                let stored = storage.storedResponse(for: URLRequest(url: url))
                if stored?.body != expected.body || stored?.url != url {
                    failures.withLock { $0.append("\(url): stored, then \(stored == nil ? "missed" : "another entry")") }
                }
                storage.removeStoredResponse(for: url)
                if storage.storedResponse(for: URLRequest(url: url)) != nil {
                    failures.withLock { $0.append("\(url): removed, then found") }
                }
            }
        }
        XCTAssertEqual(failures.value, [], file: file, line: line)
    }
}

/// Stored responses for the cache tests.
enum StoredResponses {
    /// A request, the response it got (after a redirect, so its URL differs), and every field set to a
    /// value that a default or a rounding would change.
    static let request = URLRequest(url: URL(string: "http://127.0.0.1:9/articles/7?lang=fr&page=2")!)

    static func article() -> StoredResponse {
        let headers = [
            "Content-Type": "application/json; charset=utf-8", "ETag": "W/\"article-7\"",
            "Last-Modified": "Sat, 28 Nov 2026 10:00:00 GMT", "Date": "Sun, 29 Nov 2026 09:00:00 GMT",
            "Cache-Control": "max-age=60, must-revalidate", "Age": "3", "Vary": "Accept-Language, Accept-Encoding",
            "X-Listed": "a, b",
        ]
        let requestTime = Date(timeIntervalSinceReferenceDate: 817_600_000.123_456_7)
        return StoredResponse(url: URL(string: "http://127.0.0.1:9/articles/7-moved?lang=fr&page=2")!, statusCode: 203,
                              headers: headers, body: Data((0...255).map { UInt8($0) }) + Data("{\"id\":7}".utf8),
                              varyingRequestHeaders: ["accept-language": "fr-CH, fr;q=0.9", "accept-encoding": "gzip, br"],
                              requestTime: requestTime, responseTime: requestTime.addingTimeInterval(0.256_25))
    }

    /// A small response for `url`, its body naming it, and `url` under `x-stored-for` in the secondary key.
    static func named(_ url: URL, bodySize: Int = 64) -> StoredResponse {
        var body = Data(url.absoluteString.utf8)
        body.append(Data(repeating: UInt8(ascii: "."), count: max(0, bodySize - body.count)))
        return StoredResponse(url: url, statusCode: 200, headers: ["Content-Type": "text/plain", "Cache-Control": "max-age=600"],
                              body: body, varyingRequestHeaders: ["x-stored-for": url.absoluteString],
                              requestTime: Date(timeIntervalSinceReferenceDate: 817_600_000),
                              responseTime: Date(timeIntervalSinceReferenceDate: 817_600_001))
    }

    /// Fails unless `stored` has every field of `expected`.
    static func assertEqual(_ stored: StoredResponse?, _ expected: StoredResponse,
                            file: StaticString = #filePath, line: UInt = #line) {
        guard let stored else { return XCTFail("no stored response", file: file, line: line) }
        XCTAssertEqual(stored.url, expected.url, file: file, line: line)
        XCTAssertEqual(stored.statusCode, expected.statusCode, file: file, line: line)
        // By lowercased name: corelibs' URLCache hands back names as Foundation spells them.
        XCTAssertEqual(stored.fields, expected.fields, file: file, line: line)
        XCTAssertEqual(stored.body, expected.body, file: file, line: line)
        XCTAssertEqual(stored.varyingRequestHeaders, expected.varyingRequestHeaders, file: file, line: line)
        XCTAssertEqual(stored.requestTime, expected.requestTime, file: file, line: line)
        XCTAssertEqual(stored.responseTime, expected.responseTime, file: file, line: line)
    }
}
