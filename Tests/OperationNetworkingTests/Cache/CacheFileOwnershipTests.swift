import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// The cache's folders and files must be the user's alone, as OpenSSH wants `~/.ssh`: another user's,
/// one writable by others, a symbolic link, or a database with anything but the cache's own table is
/// refused. A refused cache keeps no entries and leaves every planted file as it was.
final class CacheFileOwnershipTests: CacheDirectoryTestCase {
    /// Set in the environment of the child halves run as uid 65534: the folder the parent prepared.
    private static let otherUserBase = "ONET_TESTS_CACHE_OTHER_USER_BASE"

    func testAFolderWritableByOthersIsRefused() throws {
        let loose = directory.appendingPathComponent("loose")
        try CacheFiles.makeFolder(loose.path, mode: 0o777)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: loose)
        CacheFiles.assertRefused(cache, problem: "writable by others (mode 0777)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: loose.path), [], "nothing written in it")
    }

    func testADatabaseFileThatIsALinkIsRefusedAndItsTargetUnchanged() throws {
        let target = directory.appendingPathComponent("other-program.sqlite3")
        try CacheFiles.makeForeignDatabase(target.path)
        let cacheFolder = directory.appendingPathComponent("cache")
        try CacheFiles.makeFolder(cacheFolder.path, mode: 0o700)
        try FileManager.default.createSymbolicLink(atPath: cacheFolder.appendingPathComponent(SQLiteURLCache.fileName).path,
                                                   withDestinationPath: target.path)
        let before = try Data(contentsOf: target)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: cacheFolder)
        CacheFiles.assertRefused(cache, problem: "is a symbolic link")
        XCTAssertEqual(try Data(contentsOf: target), before, "the linked database was changed")
    }

    func testAProcessFolderThatIsALinkIsRefused() throws {
        let elsewhere = directory.appendingPathComponent("elsewhere")
        try CacheFiles.makeFolder(elsewhere.path, mode: 0o700)
        let shared = directory.appendingPathComponent(SharedCacheLocation.folderName)
        try CacheFiles.makeFolder(shared.path, mode: 0o700)
        let processFolder = shared.appendingPathComponent("victim")
        try FileManager.default.createSymbolicLink(atPath: processFolder.path, withDestinationPath: elsewhere.path)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: processFolder)
        CacheFiles.assertRefused(cache, problem: "is a symbolic link")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path), [])
    }

    func testTheSharedFolderAboveTheProcessFolderIsCheckedToo() throws {
        let shared = directory.appendingPathComponent(SharedCacheLocation.folderName)
        try CacheFiles.makeFolder(shared.path, mode: 0o777)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: shared.appendingPathComponent("victim"))
        CacheFiles.assertRefused(cache, problem: "writable by others (mode 0777)")
    }

    func testAnotherProgramsDatabaseIsLeftUntouchedAndNotUsed() throws {
        try CacheFiles.makeForeignDatabase(databaseFile.path)
        let before = try Data(contentsOf: databaseFile)
        CacheFiles.assertRefused(openSQLiteCache(), problem: "holds tables that are not the cache's")
        XCTAssertEqual(try Data(contentsOf: databaseFile), before, "another program's database was changed")
        XCTAssertEqual(try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000)
            .run("SELECT name, secret FROM accounts"), [[.text("alice"), .text("hunter2")]])
    }

    func testATriggerPlantedInTheCachesOwnSchemaNeverRuns() throws {
        openSQLiteStorage().store(StoredResponses.article(), for: StoredResponses.request)
        // Puts every deleted entry back, as a trigger planted to outlive removeAllCachedResponses() did.
        try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000).run("""
            CREATE TRIGGER keep AFTER DELETE ON entries BEGIN
                INSERT INTO entries SELECT old.key, old.response_url, old.status, old.header_fields, old.body,
                    old.metadata, old.checksum, old.size, old.stored_at, old.accessed_at;
            END
            """)
        let before = try Data(contentsOf: databaseFile)
        CacheFiles.assertRefused(openSQLiteCache(), problem: "holds tables that are not the cache's (trigger keep)")
        XCTAssertEqual(try Data(contentsOf: databaseFile), before, "the planted file was written to")
    }

    func testAFolderOfAnotherUserIsRefused() throws {
        guard geteuid() == 0 else { throw XCTSkip("giving a folder to uid \(otherUserID) needs root") }
        let theirs = directory.appendingPathComponent("theirs")
        try CacheFiles.makeFolder(theirs.path, mode: 0o755, owner: otherUserID)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: theirs)
        CacheFiles.assertRefused(cache, problem: "is owned by uid \(otherUserID), not by 0")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: theirs.path), [])
    }

    func testAsAnotherUserRootsFilesAndPlantedLinksAreRefused() throws {
        guard geteuid() == 0 else { throw XCTSkip("running a child half as uid \(otherUserID) needs root") }
        // The parent, root, plants: a folder of its own, and a valid cache file of its own in a folder
        // of the other user's. The child makes its own cases inside `work`.
        let base = directory.appendingPathComponent("other-user")
        try CacheFiles.makeFolder(directory.path, mode: 0o755)
        try CacheFiles.makeFolder(base.path, mode: 0o755)
        try CacheFiles.makeFolder(base.appendingPathComponent("root-folder").path, mode: 0o755)
        let planted = base.appendingPathComponent("root-file")
        let plantedFile = planted.appendingPathComponent(SQLiteURLCache.fileName)
        do {
            SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: planted)
                .storeCachedResponse(try XCTUnwrap(cachedArticle()), for: StoredResponses.request)
        }
        XCTAssertEqual(chmod(plantedFile.path, 0o644), 0)
        XCTAssertEqual(chown(planted.path, otherUserID, otherUserID), 0)
        try CacheFiles.makeFolder(base.appendingPathComponent("work").path, mode: 0o700, owner: otherUserID)
        let before = try Data(contentsOf: plantedFile)

        try runChildHalfAsOtherUser("CacheFileOwnershipTests/testChildHalfAsAnotherUser",
                                    environment: [Self.otherUserBase: base.path])
        XCTAssertEqual(try Data(contentsOf: plantedFile), before, "root's planted file was changed")
        XCTAssertEqual(CacheFiles.owner(plantedFile.path), 0)
    }

    /// The child half of `testAsAnotherUserRootsFilesAndPlantedLinksAreRefused`, as uid 65534.
    func testChildHalfAsAnotherUser() throws {
        guard let basePath = ProcessInfo.processInfo.environment[Self.otherUserBase] else {
            throw XCTSkip("the child process of testAsAnotherUserRootsFilesAndPlantedLinksAreRefused")
        }
        XCTAssertEqual(geteuid(), otherUserID)
        let base = URL(fileURLWithPath: basePath)
        func cache(_ folder: URL) -> SQLiteURLCache {
            SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: folder)
        }
        // Root's folder, and root's cache file in a folder of this user's.
        CacheFiles.assertRefused(cache(base.appendingPathComponent("root-folder")), problem: "is owned by uid 0, not by \(otherUserID)")
        let planted = base.appendingPathComponent("root-file")
        CacheFiles.assertRefused(cache(planted), problem: "is owned by uid 0, not by \(otherUserID)")

        let work = base.appendingPathComponent("work")
        // The database file a link to another program's database of this user's.
        let target = work.appendingPathComponent("other-program.sqlite3")
        try CacheFiles.makeForeignDatabase(target.path)
        let linked = work.appendingPathComponent("linked-file")
        try CacheFiles.makeFolder(linked.path, mode: 0o700)
        try FileManager.default.createSymbolicLink(atPath: linked.appendingPathComponent(SQLiteURLCache.fileName).path,
                                                   withDestinationPath: target.path)
        let targetBefore = try Data(contentsOf: target)
        CacheFiles.assertRefused(cache(linked), problem: "is a symbolic link")
        XCTAssertEqual(try Data(contentsOf: target), targetBefore)
        // The process folder a link elsewhere.
        let elsewhere = work.appendingPathComponent("elsewhere")
        try CacheFiles.makeFolder(elsewhere.path, mode: 0o700)
        let shared = work.appendingPathComponent("home").appendingPathComponent(SharedCacheLocation.folderName)
        try CacheFiles.makeFolder(shared.path, mode: 0o700)
        try FileManager.default.createSymbolicLink(atPath: shared.appendingPathComponent("victim").path,
                                                   withDestinationPath: elsewhere.path)
        CacheFiles.assertRefused(cache(shared.appendingPathComponent("victim")), problem: "is a symbolic link")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path), [])
        // A folder of this user's that others may write to.
        let loose = work.appendingPathComponent("loose")
        try CacheFiles.makeFolder(loose.path, mode: 0o777)
        CacheFiles.assertRefused(cache(loose), problem: "writable by others (mode 0777)")
        // A fresh folder: made for this user alone, and used.
        let fresh = work.appendingPathComponent("fresh-home").appendingPathComponent(SharedCacheLocation.folderName)
            .appendingPathComponent("app")
        let storage = CacheStorage(cache(fresh))
        storage.store(StoredResponses.article(), for: StoredResponses.request)
        flush(storage)
        StoredResponses.assertEqual(CacheStorage(cache(fresh)).storedResponse(for: StoredResponses.request), StoredResponses.article())
        for folder in [fresh, fresh.deletingLastPathComponent()] {
            XCTAssertEqual(CacheFiles.mode(folder.path).map { $0 & 0o7777 }, 0o700, folder.path)
            XCTAssertEqual(CacheFiles.owner(folder.path), otherUserID, folder.path)
        }
        XCTAssertEqual(CacheFiles.mode(fresh.appendingPathComponent(SQLiteURLCache.fileName).path).map { $0 & 0o7777 }, 0o600)
    }

    private func cachedArticle() -> CachedURLResponse? {
        let article = StoredResponses.article()
        guard let response = article.response else { return nil }
        return CachedURLResponse(response: response, data: article.body, userInfo: nil, storagePolicy: .allowed)
    }
}
