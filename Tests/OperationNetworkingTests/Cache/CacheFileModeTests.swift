import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// What the cache creates is the user's alone whatever the umask: its folders 0700, `cache.sqlite3`
/// 0600, and SQLite's `-wal` and `-shm` beside it 0600 as well (stat'ed on disk). Each umask is tried
/// in a child process of its own, which sets it before any cache exists; the library never changes it.
final class CacheFileModeTests: CacheDirectoryTestCase {
    private static let umaskVariable = "ONET_TESTS_CACHE_UMASK"
    private static let folderVariable = "ONET_TESTS_CACHE_MODE_FOLDER"

    func testFoldersAre0700AndFiles0600UnderUmask0And022() throws {
        for mask in ["0", "22"] {
            let home = directory.appendingPathComponent("umask-\(mask)")
            try runChildHalf("CacheFileModeTests/testChildHalfMakesTheCache",
                             environment: [Self.umaskVariable: mask, Self.folderVariable: home.path])
        }
    }

    /// The child half of `testFoldersAre0700AndFiles0600UnderUmask0And022`.
    func testChildHalfMakesTheCache() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let maskText = environment[Self.umaskVariable], let home = environment[Self.folderVariable],
              let mask = mode_t(maskText, radix: 8) else {
            throw XCTSkip("the child process of testFoldersAre0700AndFiles0600UnderUmask0And022")
        }
        umask(mask)
        let shared = URL(fileURLWithPath: home).appendingPathComponent(SharedCacheLocation.folderName)
        let processFolder = shared.appendingPathComponent("app")
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: processFolder)
        CacheStorage(cache).store(StoredResponses.article(), for: StoredResponses.request)
        XCTAssertNil(cache.takeWarning())
        // The cache is still open: its write-ahead log and shared-memory file exist now.
        for folder in [URL(fileURLWithPath: home), shared, processFolder] {
            XCTAssertEqual(CacheFiles.mode(folder.path).map { $0 & 0o7777 }, 0o700, "umask \(maskText): \(folder.path)")
        }
        let database = processFolder.appendingPathComponent(SQLiteURLCache.fileName).path
        for file in [database, database + "-wal", database + "-shm"] {
            XCTAssertEqual(CacheFiles.mode(file).map { $0 & 0o7777 }, 0o600, "umask \(maskText): \(file)")
        }
        StoredResponses.assertEqual(CacheStorage(cache).storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    func testAFileOthersMayReadIsTightenedTo0600() throws {
        openSQLiteStorage().store(StoredResponses.article(), for: StoredResponses.request)
        XCTAssertEqual(chmod(databaseFile.path, 0o644), 0)
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
        XCTAssertEqual(CacheFiles.mode(databaseFile.path).map { $0 & 0o7777 }, 0o600)
    }

    func testAFolderThatCannotBeMadeKeepsTheEntriesInMemoryAndSaysSoOnce() throws {
        let blocker = directory.appendingPathComponent("a-file")
        try Data("not a directory".utf8).write(to: blocker)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: blocker.appendingPathComponent("cache"))
        XCTAssertFalse(cache.isRefused)
        let warning = cache.takeWarning()
        XCTAssertTrue(warning?.contains("cannot be created: ") == true, warning ?? "no warning")
        XCTAssertTrue(warning?.hasSuffix("entries are kept in memory") == true, warning ?? "no warning")
        XCTAssertNil(cache.takeWarning())
        CacheStorage(cache).store(StoredResponses.article(), for: StoredResponses.request)
        StoredResponses.assertEqual(CacheStorage(cache).storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    func testAUsableCacheHasNoWarning() {
        let cache = openSQLiteCache()
        XCTAssertFalse(cache.isRefused)
        XCTAssertNil(cache.takeWarning())
        XCTAssertNoThrow(try cache.checkFiles())
    }
}
