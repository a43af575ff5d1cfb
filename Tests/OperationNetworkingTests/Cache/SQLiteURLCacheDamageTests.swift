import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// A damaged database file, or something else in its place: a miss without a crash, and the next store
/// is kept and read back.
final class SQLiteURLCacheDamageTests: CacheDirectoryTestCase {
    func testATruncatedFile() throws {
        try assertRecovers { file in
            let bytes = try Data(contentsOf: file)
            try bytes.prefix(bytes.count / 3).write(to: file)
        }
    }

    func testAnEmptyFileAndAFileOfRandomBytes() throws {
        try assertRecovers { file in try Data().write(to: file) }
        var generator = SplitMix64(seed: 9111)
        try assertRecovers { file in
            try Data((0..<8_192).map { _ in UInt8(truncatingIfNeeded: generator.next()) }).write(to: file)
        }
    }

    func testAFileWithAByteFlipped() throws {
        // One byte flipped at each of many places of a real database: in its header, its schema, the
        // table's and the index's pages, and the rows' fields.
        var generator = SplitMix64(seed: 47)
        for _ in 0..<40 {
            try assertRecovers(expectingMiss: false) { file in
                var bytes = try Data(contentsOf: file)
                let offset = Int(generator.next() % UInt64(bytes.count))
                bytes[offset] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
                try bytes.write(to: file)
            }
        }
    }

    func testADirectoryWhereTheFileWasIsRefusedAndKept() throws {
        // Not a regular file, so not the cache's to delete: the cache keeps nothing rather than remove
        // what it did not create.
        openSQLiteStorage().store(StoredResponses.article(), for: StoredResponses.request)
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: databaseFile.path + suffix)
        }
        try FileManager.default.createDirectory(at: databaseFile, withIntermediateDirectories: false)
        let child = databaseFile.appendingPathComponent("child")
        try Data("inside".utf8).write(to: child)
        CacheFiles.assertRefused(openSQLiteCache(), problem: "is not a regular file")
        XCTAssertEqual(try Data(contentsOf: child), Data("inside".utf8))
    }

    func testAnUnreadableFileIsAMissAndKept() throws {
        // (Root reads it anyway; then the entry is simply still there. CacheFileOpenFailureTests runs
        // this as another user.)
        openSQLiteStorage().store(StoredResponses.article(), for: StoredResponses.request)
        XCTAssertEqual(chmod(databaseFile.path, 0), 0)
        let read = openSQLiteStorage().storedResponse(for: StoredResponses.request)
        if getuid() == 0 {
            StoredResponses.assertEqual(read, StoredResponses.article())
        } else {
            XCTAssertNil(read)
        }
        XCTAssertEqual(chmod(databaseFile.path, 0o600), 0)
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    func testDamageAwayFromTheEntryReadIsFoundWhenTheCacheOpens() throws {
        do {
            let storage = openSQLiteStorage()
            for index in 0..<40 {
                let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/filler/\(index)"))
                storage.store(StoredResponses.named(url, bodySize: 1_000), for: URLRequest(url: url))
            }
            storage.store(StoredResponses.article(), for: StoredResponses.request)
        }
        // A leaf of the table that does not hold the entry asked for: which one does depends on how the
        // write batches fell, so each leaf is damaged in turn until the entry still reads.
        let key = CacheEntryMetadata.key(for: try XCTUnwrap(StoredResponses.request.url))
        let (leaves, size) = try {
            let inspector = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000)
            return (try inspector.run("SELECT pageno FROM dbstat WHERE name = 'entries' AND pagetype = 'leaf'"),
                    try inspector.run("PRAGMA page_size"))
        }()
        guard case .integer(let pageSize)? = size.first?.first, leaves.count > 1 else {
            return XCTFail("the table has no second leaf: \(leaves), page size \(size)")
        }
        let intact = try Data(contentsOf: databaseFile)
        var damagedOneAway = false
        for case .integer(let page)? in leaves.map(\.first) where !damagedOneAway {
            var bytes = intact
            bytes[Int(page - 1) * Int(pageSize)] = 0  // the leaf's page type
            try bytes.write(to: databaseFile)
            // The entry itself still reads: only a check of the whole file finds the damage.
            let direct = try? SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000)
                .run("SELECT length(body) FROM entries WHERE key = ?", [.text(key)])
            damagedOneAway = direct?.count == 1
        }
        XCTAssertTrue(damagedOneAway, "every leaf's damage reached the entry asked for")

        let reopened = openSQLiteStorage()
        XCTAssertNil(reopened.storedResponse(for: StoredResponses.request), "a damaged file was kept")
        let check = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000).run("PRAGMA quick_check")
        XCTAssertEqual(check, [[.text("ok")]])
        reopened.store(StoredResponses.article(), for: StoredResponses.request)
        flush(reopened)
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), StoredResponses.article())
    }

    func testARowWhoseFieldsCannotBeDecodedIsAMissAndDeleted() throws {
        let damaged: [(String, String)] = [
            ("header fields not JSON", "UPDATE entries SET header_fields = x'7b2241223a'"),
            ("header fields of another shape", "UPDATE entries SET header_fields = CAST('[1]' AS BLOB)"),
            ("a status out of range", "UPDATE entries SET status = 7"),
            ("a status of another type", "UPDATE entries SET status = 'two hundred'"),
            ("a body of another type", "UPDATE entries SET body = 12"),
            ("metadata of another type", "UPDATE entries SET metadata = 1.5"),
        ]
        try assertMissedAndDeleted(after: damaged)
    }

    func testARowChangedUnderItsChecksumIsAMissAndDeleted() throws {
        // Each change keeps every field's type and shape, so only the checksum tells.
        let changed: [(String, String)] = [
            ("one byte of the body", "UPDATE entries SET body = CAST(substr(CAST(body AS TEXT), 2) || 'x' AS BLOB)"),
            ("the status", "UPDATE entries SET status = 204"),
            ("the header fields", "UPDATE entries SET header_fields = CAST('{}' AS BLOB)"),
            ("the response URL", "UPDATE entries SET response_url = 'http://127.0.0.1:9/elsewhere'"),
            ("the metadata", "UPDATE entries SET metadata = NULL"),
        ]
        try assertMissedAndDeleted(after: changed)
    }

    func testARowFoundUnderAnotherEntrysKeyIsAMiss() throws {
        let other = try XCTUnwrap(URL(string: "http://127.0.0.1:9/other"))
        let storage = openSQLiteStorage()
        storage.store(StoredResponses.article(), for: StoredResponses.request)
        storage.store(StoredResponses.named(other), for: URLRequest(url: other))
        // The two rows trade keys, as a damaged index pointing at the wrong row would make them.
        let keys = [CacheEntryMetadata.key(for: try XCTUnwrap(StoredResponses.request.url)), CacheEntryMetadata.key(for: other)]
        let connection = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000)
        try connection.run("UPDATE entries SET key = 'swapping' WHERE key = ?", [.text(keys[0])])
        try connection.run("UPDATE entries SET key = ? WHERE key = ?", [.text(keys[0]), .text(keys[1])])
        try connection.run("UPDATE entries SET key = ? WHERE key = 'swapping'", [.text(keys[1])])
        XCTAssertNil(openSQLiteCache().cachedResponse(for: StoredResponses.request))
        XCTAssertNil(openSQLiteCache().cachedResponse(for: URLRequest(url: other)))
    }

    /// For each labelled SQL update: stores the article, runs the update on the file, and checks that
    /// the cache misses the entry and deletes its row.
    private func assertMissedAndDeleted(after updates: [(String, String)], file: StaticString = #filePath,
                                        line: UInt = #line) throws {
        for (label, update) in updates {
            openSQLiteStorage().store(StoredResponses.article(), for: StoredResponses.request)
            try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000).run(update)
            XCTAssertNil(openSQLiteCache().cachedResponse(for: StoredResponses.request), label, file: file, line: line)
            let rows = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000).run("SELECT key FROM entries")
            XCTAssertEqual(rows, [], "\(label): not deleted", file: file, line: line)
        }
    }

    /// Stores entries, closes the cache, damages the database file with `damage`, and checks that a new
    /// cache misses (when `expectingMiss`; a flipped byte may leave the entry intact, and then it must
    /// come back unchanged), and then stores and reads a new entry for the same URL.
    private func assertRecovers(expectingMiss: Bool = true, file: StaticString = #filePath, line: UInt = #line,
                                _ damage: (URL) throws -> Void) throws {
        let original = StoredResponses.named(try XCTUnwrap(StoredResponses.request.url), bodySize: 700)
        do {
            let storage = openSQLiteStorage()
            for index in 0..<20 {
                let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/filler/\(index)"))
                storage.store(StoredResponses.named(url, bodySize: 300), for: URLRequest(url: url))
            }
            storage.store(original, for: StoredResponses.request)
        }
        // The write-ahead log is folded into the file when the last connection closes.
        XCTAssertFalse(FileManager.default.fileExists(atPath: databaseFile.path + "-wal"), file: file, line: line)
        try damage(databaseFile)

        let afterDamage = openSQLiteStorage()
        let read = afterDamage.storedResponse(for: StoredResponses.request)
        if expectingMiss {
            XCTAssertNil(read, "damaged file answered", file: file, line: line)
        } else if let read {
            StoredResponses.assertEqual(read, original, file: file, line: line)
        }
        let replacement = StoredResponses.article()
        afterDamage.store(replacement, for: StoredResponses.request)
        StoredResponses.assertEqual(afterDamage.storedResponse(for: StoredResponses.request), replacement, file: file, line: line)
        flush(afterDamage)
        StoredResponses.assertEqual(openSQLiteStorage().storedResponse(for: StoredResponses.request), replacement,
                                    file: file, line: line)
        try FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
}
