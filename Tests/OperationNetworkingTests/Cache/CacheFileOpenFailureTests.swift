import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// A cache file that cannot be opened now (no descriptor left, no permission) is never deleted: that
/// call is a miss, and a later call, once the file can be opened, finds the entries. Only a file SQLite
/// reports as damaged is replaced (`SQLiteURLCacheDamageTests`).
final class CacheFileOpenFailureTests: CacheDirectoryTestCase {
    private static let folderVariable = "ONET_TESTS_CACHE_OPEN_FAILURE_FOLDER"

    func testAProcessOutOfDescriptorsKeepsTheFile() throws {
        openSQLiteStorage().store(StoredResponses.article(), for: StoredResponses.request)
        try runChildHalf("CacheFileOpenFailureTests/testChildHalfRunsOutOfDescriptors",
                         environment: [Self.folderVariable: directory.path])
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    /// The child half of `testAProcessOutOfDescriptorsKeepsTheFile`: it takes every descriptor its
    /// limit allows, so SQLite cannot open the file.
    func testChildHalfRunsOutOfDescriptors() throws {
        guard let folder = ProcessInfo.processInfo.environment[Self.folderVariable] else {
            throw XCTSkip("the child process of testAProcessOutOfDescriptorsKeepsTheFile")
        }
        let file = URL(fileURLWithPath: folder).appendingPathComponent(SQLiteURLCache.fileName)
        let size = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int)
        var limit = rlimit()
        XCTAssertEqual(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit), 0)
        limit.rlim_cur = 256
        XCTAssertEqual(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit), 0)
        var taken: [Int32] = []
        while true {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { break }
            taken.append(descriptor)
        }
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: URL(fileURLWithPath: folder))
        let missed = cache.cachedResponse(for: StoredResponses.request)
        let sizeWhileOut = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int
        taken.forEach { close($0) }
        XCTAssertFalse(taken.isEmpty)
        XCTAssertNil(missed, "the file was opened after all: the test proves nothing")
        XCTAssertEqual(sizeWhileOut, size, "the file was replaced")
        XCTAssertFalse(cache.isRefused)
        // Tried again on the next call: the same instance finds the entry.
        StoredResponses.assertEqual(CacheStorage(cache).storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    func testAsAnotherUserAFileItMayNotReadIsKept() throws {
        guard geteuid() == 0 else { throw XCTSkip("running a child half as uid \(otherUserID) needs root") }
        let folder = directory.appendingPathComponent("locked")
        try CacheFiles.makeFolder(directory.path, mode: 0o755)
        try CacheFiles.makeFolder(folder.path, mode: 0o700, owner: otherUserID)
        try runChildHalfAsOtherUser("CacheFileOpenFailureTests/testChildHalfCannotReadItsFile",
                                    environment: [Self.folderVariable: folder.path])
    }

    /// The child half of `testAsAnotherUserAFileItMayNotReadIsKept`, as uid 65534.
    func testChildHalfCannotReadItsFile() throws {
        guard let path = ProcessInfo.processInfo.environment[Self.folderVariable] else {
            throw XCTSkip("the child process of testAsAnotherUserAFileItMayNotReadIsKept")
        }
        let folder = URL(fileURLWithPath: path)
        func storage() -> CacheStorage {
            CacheStorage(SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: folder))
        }
        storage().store(StoredResponses.article(), for: StoredResponses.request)
        let file = folder.appendingPathComponent(SQLiteURLCache.fileName).path
        let before = try Data(contentsOf: URL(fileURLWithPath: file))
        XCTAssertEqual(chmod(file, 0), 0)
        let locked = storage()
        XCTAssertNil(locked.storedResponse(for: StoredResponses.request))
        locked.store(StoredResponses.named(try XCTUnwrap(StoredResponses.request.url)), for: StoredResponses.request)
        XCTAssertEqual(CacheFiles.mode(file).map { $0 & 0o7777 }, 0, "the file was replaced")
        XCTAssertEqual(chmod(file, 0o600), 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), before, "the file was changed")
        StoredResponses.assertEqual(storage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }
}
