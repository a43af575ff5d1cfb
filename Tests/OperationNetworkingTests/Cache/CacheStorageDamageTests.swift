import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// A damaged or foreign file where corelibs' `URLCache` keeps an entry: a miss, and the next store
/// replaces it at once, in the same second (corelibs names its files by the second).
///
/// Not here, because it stops the process: an entry file that is a well-formed keyed archive of another
/// class, or one whose damage makes it decode an object of the wrong class. corelibs' unarchiver then
/// calls `fatalError` or dereferences a bad pointer inside `URLCache.cachedResponse(for:)`.
final class CacheStorageDamageTests: CacheDirectoryTestCase {
    func testATruncatedEntry() throws {
        try assertReplaced { file in
            let bytes = try Data(contentsOf: file)
            try bytes.prefix(bytes.count / 2).write(to: file)
        }
    }

    func testAnEmptyEntry() throws {
        try assertReplaced { file in try Data().write(to: file) }
    }

    func testAnEntryOfRandomBytes() throws {
        var generator = SplitMix64(seed: 47)
        try assertReplaced { file in
            try Data((0..<1_500).map { _ in UInt8(truncatingIfNeeded: generator.next()) }).write(to: file)
        }
    }

    func testAnEntryInAnotherFormat() throws {
        try assertReplaced { file in
            // A PNG's signature and header chunk.
            let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
            try Data(png + [UInt8](repeating: 0, count: 17)).write(to: file)
        }
        try assertReplaced { file in try Data("{\"response\": \"not an archive\"}".utf8).write(to: file) }
        try assertReplaced { file in
            let list = ["response": "a plain property list"]
            try PropertyListSerialization.data(fromPropertyList: list, format: .binary, options: 0).write(to: file)
        }
    }

    func testADirectoryWhereTheEntryWas() throws {
        try assertReplaced { file in
            try FileManager.default.removeItem(at: file)
            try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
            try Data("inside".utf8).write(to: file.appendingPathComponent("child"))
        }
    }

    func testForeignFilesBesideTheEntriesAreLeftAlone() throws {
        let foreign = ["README", "notes.txt", "1.2.3.storedcachedurlresponse", "x.storedcachedurlresponse"]
        for name in foreign {
            try Data("foreign".utf8).write(to: directory.appendingPathComponent(name))
        }
        let subdirectory = directory.appendingPathComponent("subdirectory")
        try FileManager.default.createDirectory(at: subdirectory, withIntermediateDirectories: false)
        let article = StoredResponses.article()
        openStorage(diskCapacity: 50_000).store(article, for: StoredResponses.request)
        StoredResponses.assertEqual(openStorage(diskCapacity: 50_000).storedResponse(for: StoredResponses.request), article)
        // Eviction to a capacity smaller than everything there removes entries only.
        for index in 0..<20 {
            let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/beside/\(index)"))
            openStorage(diskCapacity: 50_000).store(StoredResponses.named(url, bodySize: 2_000), for: URLRequest(url: url))
        }
        let names = Set(try directoryContents().map(\.lastPathComponent))
        XCTAssertTrue(names.isSuperset(of: foreign + ["subdirectory"]), "\(names)")
    }

    /// Stores an entry, damages its file with `damage`, and checks that a new cache misses it and then
    /// stores and reads a new entry for the same URL.
    private func assertReplaced(file: StaticString = #filePath, line: UInt = #line, _ damage: (URL) throws -> Void) throws {
        let url = try XCTUnwrap(StoredResponses.request.url)
        openStorage().store(StoredResponses.named(url, bodySize: 700), for: StoredResponses.request)
        let entries = try directoryContents()
        XCTAssertEqual(entries.count, 1, file: file, line: line)
        let entry = try XCTUnwrap(entries.first, file: file, line: line)
        try damage(entry)

        XCTAssertNil(openStorage().storedResponse(for: StoredResponses.request), "damaged entry answered",
                     file: file, line: line)
        let replacement = StoredResponses.article()
        openStorage().store(replacement, for: StoredResponses.request)
        StoredResponses.assertEqual(openStorage().storedResponse(for: StoredResponses.request), replacement,
                                    file: file, line: line)
        XCTAssertEqual(try directoryContents().count, 1, "the damaged entry stayed beside the new one",
                       file: file, line: line)
        openStorage().removeStoredResponse(for: url)
    }
}
