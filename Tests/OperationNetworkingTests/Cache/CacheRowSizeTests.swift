import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// A row larger than the store's capacity (planted, or left by a larger capacity) is a miss and is
/// deleted, found so from the row's header before its body is read; the stored `size` is not trusted.
final class CacheRowSizeTests: CacheDirectoryTestCase {
    func testARowSeveralTimesTheCapacityIsDeletedUnread() throws {
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/planted"))
        let request = URLRequest(url: url)
        // A valid row, checksum and all, stored by a cache eight times as large.
        let large = StoredResponses.named(url, bodySize: 512 << 10)
        CacheStorage(openSQLiteCache(diskCapacity: 64 << 20)).store(large, for: request)
        // Its recorded size a lie, as a planted row's would be.
        try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000).run("UPDATE entries SET size = 10")

        let small = openSQLiteCache(diskCapacity: 64 << 10)
        XCTAssertNil(small.cachedResponse(for: request), "a row eight times the capacity was served")
        XCTAssertEqual(small.rowsReadWhole, 0, "the row was read whole")
        let rows = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000).run("SELECT key FROM entries")
        XCTAssertEqual(rows, [], "the oversized row was kept")
    }

    func testARowWithinTheCapacityIsReadOnce() throws {
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/fits"))
        openSQLiteStorage(diskCapacity: 64 << 10).store(StoredResponses.named(url, bodySize: 2_000), for: URLRequest(url: url))
        let cache = openSQLiteCache(diskCapacity: 64 << 10)
        XCTAssertEqual(cache.cachedResponse(for: URLRequest(url: url))?.data, StoredResponses.named(url, bodySize: 2_000).body)
        XCTAssertEqual(cache.rowsReadWhole, 1)
    }
}
