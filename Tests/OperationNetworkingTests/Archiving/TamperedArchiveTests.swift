import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// NSSecureCoding's typed decoding: an archive whose values were replaced by values of another type
/// is an error, never an object with defaults in place of the tampered settings.
final class TamperedArchiveTests: LibraryTestCase {
    /// `archive` with every string value (not class names, not `$null`) replaced by a number.
    private func replacingStringsWithNumbers(in archive: Data) throws -> Data {
        var plist = try XCTUnwrap(try PropertyListSerialization.propertyList(from: archive, format: nil) as? [String: Any])
        var objects = try XCTUnwrap(plist["$objects"] as? [Any])
        var replaced = 0
        for index in objects.indices {
            if let string = objects[index] as? String, string != "$null" {
                objects[index] = 42
                replaced += 1
            }
        }
        XCTAssertGreaterThan(replaced, 0)
        plist["$objects"] = objects
        return try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
    }

    private func assertInvalidValue(_ body: () throws -> Any, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            XCTAssertEqual((error as NSError).domain, ArchiveErrorDomain, file: file, line: line)
            XCTAssertEqual((error as NSError).code, ArchiveErrorCode.invalidValue.rawValue, "\(error)", file: file, line: line)
        }
    }

    func testAManagerWhoseStringsBecameNumbersIsRefused() throws {
        let manager = try ArchiveTests.configuredManager(baseURL: try XCTUnwrap(URL(string: "https://api.example.com/v1/")))
        let tampered = try replacingStringsWithNumbers(in: try SafeArchive.archive(manager))
        assertInvalidValue { try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: tampered) }
    }

    func testAnOperationWhoseStringsBecameNumbersIsRefused() throws {
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "https://example.com/file"))))
        let tampered = try replacingStringsWithNumbers(in: try SafeArchive.archive(operation))
        assertInvalidValue { try SafeArchive.unarchive(HTTPRequestOperation.self, from: tampered) }
    }

    func testASerializerWhoseSettingsBecameNumbersIsRefused() throws {
        let serializer = HTTPRequestSerializer()
        serializer.setValue("kept", forHTTPHeaderField: "X-Custom")
        // The headers are stored as JSON data; replace that data by a number.
        let archive = try SafeArchive.archive(serializer)
        var plist = try XCTUnwrap(try PropertyListSerialization.propertyList(from: archive, format: nil) as? [String: Any])
        var objects = try XCTUnwrap(plist["$objects"] as? [Any])
        for index in objects.indices where objects[index] is Data { objects[index] = 7 }
        plist["$objects"] = objects
        let tampered = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        assertInvalidValue { try SafeArchive.unarchive(HTTPRequestSerializer.self, from: tampered) }
    }

    /// Settings stored as JSON are read by `JSONSerialization`, whose reader refuses more than 512
    /// levels without recursing further; so JSON nested 100,000 deep in an archive is an invalid
    /// value, not a stack overflow (and nothing deep reaches `encodeJSON`'s `isValidJSONObject`).
    func testASerializerWhoseJSONSettingsAreNestedAHundredThousandDeepIsRefused() throws {
        let depth = 100_000
        let deepArrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let deepObjects = String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
        for json in [deepArrays, deepObjects] {
            let archive = try SafeArchive.archive(HTTPRequestSerializer())
            let tampered = try editing(archive) { objects in
                for index in objects.indices where objects[index] is Data { objects[index] = Data(json.utf8) }
            }
            XCTAssertLessThan(tampered.count, SafeArchive.maximumSize)
            assertInvalidValue { try SafeArchive.unarchive(HTTPRequestSerializer.self, from: tampered) }
        }
    }

    // MARK: - Numbers replaced by strings

    /// An archive as a property list, edited through `edit`, written back as a binary archive.
    private func editing(_ archive: Data, _ edit: (inout [Any]) throws -> Void) throws -> Data {
        var plist = try XCTUnwrap(try PropertyListSerialization.propertyList(from: archive, format: nil) as? [String: Any])
        var objects = try XCTUnwrap(plist["$objects"] as? [Any])
        try edit(&objects)
        plist["$objects"] = objects
        return try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
    }

    private static func isNumber(_ value: Any) -> Bool {
        value is NSNumber || value is Bool || value is Int || value is Double
    }

    /// Every (object index, key) of `archive` whose value is a number or a boolean.
    private func numberKeys(in archive: Data) throws -> [(index: Int, key: String)] {
        var found: [(index: Int, key: String)] = []
        _ = try editing(archive) { objects in
            for (index, object) in objects.enumerated() {
                guard let entry = object as? [String: Any], entry["$class"] != nil else { continue }
                for (key, value) in entry where key != "$class" && Self.isNumber(value) { found.append((index, key)) }
            }
        }
        return found
    }

    /// Replaces each number of `archive`, one at a time, by a string and expects `invalidValue` every
    /// time; returns the keys tried.
    private func assertEveryNumberIsTypeChecked<T: NSObject & NSSecureCoding>(_ type: T.Type, in archive: Data,
                                                                            file: StaticString = #filePath,
                                                                            line: UInt = #line) throws -> Set<String> {
        let keys = try numberKeys(in: archive)
        for (index, key) in keys {
            let tampered = try editing(archive) { objects in
                guard var entry = objects[index] as? [String: Any] else { return }
                entry[key] = "1"
                objects[index] = entry
            }
            XCTAssertThrowsError(try SafeArchive.unarchive(type, from: tampered), "\(key) as a string", file: file, line: line) {
                XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.invalidValue.rawValue, "\(key): \($0)", file: file, line: line)
            }
        }
        return Set(keys.map(\.key))
    }

    func testEveryNumberOfAManagerReplacedByAStringIsRefused() throws {
        let manager = try ArchiveTests.configuredManager(baseURL: try XCTUnwrap(URL(string: "https://api.example.com/v1/")))
        let keys = try assertEveryNumberIsTypeChecked(HTTPRequestOperationManager.self, in: try SafeArchive.archive(manager))
        let expected: Set<String> = ["version", "SSLPinningMode", "allowInvalidCertificates", "validatesDomainName",
                                     "shouldUseCredentialStorage", "timeoutInterval", "cachePolicy", "stringEncoding",
                                     "queryStringSerializationStyle", "writingOptions", "readingOptions",
                                     "removesKeysWithNullValues", "responseSerializers.count", "format", "readOptions"]
        XCTAssertTrue(expected.isSubset(of: keys), "not tried: \(expected.subtracting(keys).sorted())")
    }

    func testEveryNumberOfAnOperationReplacedByAStringIsRefused() throws {
        let archive = try pausedOperationArchive(offset: 10, rangeEnd: 20)
        let keys = try assertEveryNumberIsTypeChecked(HTTPRequestOperation.self, in: archive)
        let expected: Set<String> = ["version", "state", "request.timeout", "request.cookies", "response.statusCode",
                                     "error.code", "totalBytesRead", "resume.rangeEnd", "resume.rangesSupported",
                                     "shouldUseCredentialStorage", "SSLPinningMode", "stringEncoding"]
        XCTAssertTrue(expected.isSubset(of: keys), "not tried: \(expected.subtracting(keys).sorted())")
    }

    /// The pinning mode replaced by a reference to a string object (as an archiver writes strings)
    /// must not decode as `.none`, which would turn pinning off.
    func testAPinningModeReplacedByAStringObjectIsRefused() throws {
        let policy = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [Data([1, 2, 3])])
        let manager = HTTPRequestOperationManager(baseURL: URL(string: "https://pinned.example.com/"))
        manager.securityPolicy = policy
        let tampered = try editing(try SafeArchive.archive(manager)) { objects in
            let managerIndex = try XCTUnwrap(objects.firstIndex { ($0 as? [String: Any])?["baseURL"] != nil })
            let stringReference = try XCTUnwrap((objects[managerIndex] as? [String: Any])?["baseURL"])
            let policyIndex = try XCTUnwrap(objects.firstIndex { ($0 as? [String: Any])?["SSLPinningMode"] != nil })
            var entry = try XCTUnwrap(objects[policyIndex] as? [String: Any])
            entry["SSLPinningMode"] = stringReference
            objects[policyIndex] = entry
        }
        assertInvalidValue { try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: tampered) }
    }

    // MARK: - Resume offsets

    /// A ready operation's archive turned into a paused one with a response, an error and a resume
    /// point (numbers as the archiver writes them; strings reuse the request's URL string object).
    private func pausedOperationArchive(offset: Int64, rangeEnd: Int64?) throws -> Data {
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "https://example.com/file"))))
        return try editing(try SafeArchive.archive(operation)) { objects in
            let index = try XCTUnwrap(objects.firstIndex { ($0 as? [String: Any])?["request.url"] != nil })
            var entry = try XCTUnwrap(objects[index] as? [String: Any])
            let urlString = try XCTUnwrap(entry["request.url"])
            entry["state"] = -1
            entry["totalBytesRead"] = offset
            if let rangeEnd { entry["resume.rangeEnd"] = rangeEnd }
            entry["resume.rangesSupported"] = true
            entry["response.statusCode"] = 206
            entry["response.url"] = urlString
            entry["error.code"] = 5
            entry["error.domain"] = urlString
            objects[index] = entry
        }
    }

    func testAPlausibleResumePointDecodes() throws {
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: try pausedOperationArchive(offset: 10, rangeEnd: 20))
        XCTAssertTrue(restored.isPaused)
        XCTAssertEqual(restored.resumePointForTesting?.offset, 10)
        XCTAssertEqual(restored.resumePointForTesting?.rangeEnd, 20)
        XCTAssertEqual(restored.response?.statusCode, 206)
    }

    func testAbsurdResumeOffsetsAreRefused() throws {
        for (offset, rangeEnd) in [(Int64(-1), nil), ((1 << 53) + 1, nil), (100, 50), (0, Int64.max), (Int64.min, nil)] as [(Int64, Int64?)] {
            let archive = try pausedOperationArchive(offset: offset, rangeEnd: rangeEnd)
            XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive), "offset \(offset), end \(String(describing: rangeEnd))") {
                XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.invalidValue.rawValue, "\(offset) \(String(describing: rangeEnd)): \($0)")
            }
        }
    }

    func testAnUntamperedArchiveStillDecodes() throws {
        let manager = try ArchiveTests.configuredManager(baseURL: try XCTUnwrap(URL(string: "https://api.example.com/v1/")))
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: try SafeArchive.archive(manager))
        XCTAssertEqual(restored.baseURL?.absoluteString, "https://api.example.com/v1/")
        XCTAssertEqual(restored.requestSerializer.value(forHTTPHeaderField: "X-Custom"), "kept")
    }
}
