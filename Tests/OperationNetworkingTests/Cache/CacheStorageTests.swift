import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// CacheStorage over corelibs' `URLCache`: what an entry keeps, which URL it answers, what it refuses,
/// and eviction to the disk capacity. Each read is from a new `URLCache` without memory, so from the files.
final class CacheStorageTests: CacheDirectoryTestCase {
    func testEveryFieldComesBackFromTheFiles() {
        let article = StoredResponses.article()
        openStorage().store(article, for: StoredResponses.request)
        StoredResponses.assertEqual(openStorage().storedResponse(for: StoredResponses.request), article)
    }

    func testTheSecondaryKeyFieldsComeBackLowercasedAsSent() {
        var article = StoredResponses.article()
        article.varyingRequestHeaders = ["Accept-Language": "de", "X-Api-Version": "2024-01"]
        openStorage().store(article, for: StoredResponses.request)
        XCTAssertEqual(openStorage().storedResponse(for: StoredResponses.request)?.varyingRequestHeaders,
                       ["accept-language": "de", "x-api-version": "2024-01"])
    }

    func testAnotherQuerySchemeOrFragmentOfThePath() throws {
        let page1 = try XCTUnwrap(URL(string: "http://127.0.0.1:9/items?page=1"))
        openStorage().store(StoredResponses.named(page1), for: URLRequest(url: page1))
        let storage = openStorage()
        for other in ["http://127.0.0.1:9/items?page=2", "http://127.0.0.1:9/items", "https://127.0.0.1:9/items?page=1"] {
            let request = URLRequest(url: try XCTUnwrap(URL(string: other)))
            // corelibs keys by host, port and path: it hands over page 1's entry for each of these.
            XCTAssertNotNil(storage.urlCache.cachedResponse(for: request), other)
            XCTAssertNil(storage.storedResponse(for: request), other)
        }
        // The same URL with a fragment, or its scheme and host in capitals, is the same resource.
        for same in ["http://127.0.0.1:9/items?page=1#top", "HTTP://127.0.0.1:9/items?page=1"] {
            XCTAssertEqual(storage.storedResponse(for: URLRequest(url: try XCTUnwrap(URL(string: same))))?.body,
                           StoredResponses.named(page1).body, same)
        }
        // Another URL's entry in the slot is not removed by the miss.
        XCTAssertNotNil(openStorage().storedResponse(for: URLRequest(url: page1)))
    }

    func testRemovingTheURLRemovesItsEntry() {
        openStorage().store(StoredResponses.article(), for: StoredResponses.request)
        openStorage().removeStoredResponse(for: StoredResponses.request.url!)
        XCTAssertNil(openStorage().storedResponse(for: StoredResponses.request))
        XCTAssertEqual(try directoryContents(), [])
    }

    func testAnEntryWhoseMetadataCannotBeReadIsAMissAndRemoved() throws {
        let url = try XCTUnwrap(StoredResponses.request.url)
        let response = try XCTUnwrap(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:]))
        var newer = CacheEntryMetadata(requestURL: CacheEntryMetadata.key(for: url), varyingRequestHeaders: [:],
                                       requestTime: Date(), responseTime: Date())
        newer.version = CacheEntryMetadata.currentVersion + 1
        let damaged: [(String, Any)] = [("not JSON", Data("{\"requestURL\": ".utf8)), ("not Data", "a string"),
                                        ("JSON of another shape", Data("[1, 2]".utf8)),
                                        ("another version", try JSONEncoder().encode(newer))]
        for (label, value) in damaged {
            let cached = CachedURLResponse(response: response, data: Data("body".utf8),
                                           userInfo: [CacheEntryMetadata.userInfoKey: value], storagePolicy: .allowed)
            openCache().storeCachedResponse(cached, for: StoredResponses.request)
            XCTAssertNotNil(openCache().cachedResponse(for: StoredResponses.request), label)
            XCTAssertNil(openStorage().storedResponse(for: StoredResponses.request), label)
            XCTAssertNil(openCache().cachedResponse(for: StoredResponses.request), "\(label): not removed")
        }
    }

    func testAnEntryTheAppStoredAnswersItsOwnURLAsStale() throws {
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/app/feed.json?since=3"))
        let response = try XCTUnwrap(HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                                     headerFields: ["ETag": "\"feed\""]))
        openCache().storeCachedResponse(CachedURLResponse(response: response, data: Data("feed".utf8)), for: URLRequest(url: url))
        let stored = try XCTUnwrap(openStorage().storedResponse(for: URLRequest(url: url)))
        XCTAssertEqual(stored.body, Data("feed".utf8))
        XCTAssertEqual(stored.response?.value(forHTTPHeaderField: "ETag"), "\"feed\"")
        XCTAssertEqual(stored.varyingRequestHeaders, [:])
        XCTAssertEqual(stored.requestTime, .distantPast)
        XCTAssertEqual(stored.responseTime, .distantPast)
        // Without the URL it was stored for, only its own response's URL can vouch for it.
        let other = URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:9/app/feed.json?since=4")))
        XCTAssertNil(openStorage().storedResponse(for: other))
    }

    func testABodyOverAbout5PercentOfTheCapacityIsNotStoredAndDropsTheOldEntry() throws {
        let capacity = 200_000
        let url = try XCTUnwrap(StoredResponses.request.url)
        let neighbour = URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:9/neighbour")))
        let storage = { self.openStorage(diskCapacity: capacity) }
        storage().store(StoredResponses.named(try XCTUnwrap(neighbour.url)), for: neighbour)
        storage().store(StoredResponses.named(url, bodySize: capacity / 20), for: StoredResponses.request)
        XCTAssertEqual(storage().storedResponse(for: StoredResponses.request)?.body.count, capacity / 20)
        storage().store(StoredResponses.named(url, bodySize: capacity / 20 + 1), for: StoredResponses.request)
        XCTAssertNil(storage().storedResponse(for: StoredResponses.request))
        XCTAssertNotNil(storage().storedResponse(for: neighbour))
        // The memory capacity counts when it is the larger one.
        let memory = CacheStorage(URLCache(memoryCapacity: capacity, diskCapacity: 0, diskPath: nil))
        memory.store(StoredResponses.named(url, bodySize: capacity / 20), for: StoredResponses.request)
        XCTAssertNotNil(memory.storedResponse(for: StoredResponses.request))
    }

    func testTheDiskStaysWithinItsCapacityAndKeepsTheNewest() throws {
        let capacity = 100_000
        var urls: [URL] = []
        for index in 0..<60 {
            let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/evict/\(index)"))
            urls.append(url)
            // About 6 KB on disk each: 60 of them are more than three times the capacity.
            let stored = StoredResponses.named(url, bodySize: capacity / 20)
            openStorage(diskCapacity: capacity).store(stored, for: URLRequest(url: url))
            XCTAssertLessThanOrEqual(try directorySize(), capacity, "after \(index + 1) entries")
        }
        let storage = openStorage(diskCapacity: capacity)
        let kept = urls.filter { storage.storedResponse(for: URLRequest(url: $0)) != nil }
        XCTAssertEqual(kept.last, urls.last)
        XCTAssertGreaterThan(kept.count, 10)
        XCTAssertLessThan(kept.count, 20)
    }

    func testManyThreadsStoringReadingAndRemovingGetOnlyTheirURLsEntries() throws {
        // The twelve URLs share four of corelibs' slots (the query is not part of its key), so threads
        // keep replacing each other's entries under the same file name.
        try assertConcurrentUseKeepsEntriesApart(openStorage(diskCapacity: 4 << 20), steps: 45) { self.openStorage() }
    }

    func testEightThreadsEachReadBackWhatTheyStoredAndNothingTheyRemoved() {
        assertConcurrentUseDropsNothing(openStorage(diskCapacity: 4 << 20), steps: 45)
    }
}
