import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// An entry outlives the process that stored it.
final class CacheStorageRestartTests: CacheDirectoryTestCase {
    /// Where the child half stores; set only in the child's environment.
    private static let childDirectoryVariable = "ONET_CACHE_RESTART_DIRECTORY"

    func testAnEntryStoredByAnotherProcessIsReadAfterItExited() throws {
        try runChildHalf("testChildHalfStoresAnEntry")
        StoredResponses.assertEqual(openStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    func testAnEntryStoredInTheSQLiteCacheByAnotherProcessIsReadAfterItExited() throws {
        try runChildHalf("testChildHalfStoresAnEntryInTheSQLiteCache")
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    /// Runs the child half `name` below in a process of its own, which stores one entry and exits.
    private func runChildHalf(_ name: String) throws {
        try runChildHalf("CacheStorageRestartTests/\(name)", environment: [Self.childDirectoryVariable: directory.path])
    }

    /// The child half of `testAnEntryStoredByAnotherProcessIsReadAfterItExited`; skipped in any other run.
    func testChildHalfStoresAnEntry() throws {
        guard let path = ProcessInfo.processInfo.environment[Self.childDirectoryVariable] else {
            throw XCTSkip("the child process of testAnEntryStoredByAnotherProcessIsReadAfterItExited")
        }
        let storage = CacheStorage(URLCache(memoryCapacity: 4 << 20, diskCapacity: 20 << 20, diskPath: path))
        storage.store(StoredResponses.article(), for: StoredResponses.request)
    }

    /// The child half of `testAnEntryStoredInTheSQLiteCacheByAnotherProcessIsReadAfterItExited`.
    func testChildHalfStoresAnEntryInTheSQLiteCache() throws {
        guard let path = ProcessInfo.processInfo.environment[Self.childDirectoryVariable] else {
            throw XCTSkip("the child process of testAnEntryStoredInTheSQLiteCacheByAnotherProcessIsReadAfterItExited")
        }
        let cache = SQLiteURLCache(memoryCapacity: 4 << 20, diskCapacity: 20 << 20, directory: URL(fileURLWithPath: path))
        CacheStorage(cache).store(StoredResponses.article(), for: StoredResponses.request)
    }
}
