import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// NSSecureCoding's typed decoding: an archive whose values were replaced by values of another type
/// is an error, never an object with defaults in place of the tampered settings.
final class TamperedArchiveTests: XCTestCase {
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

    func testAnUntamperedArchiveStillDecodes() throws {
        let manager = try ArchiveTests.configuredManager(baseURL: try XCTUnwrap(URL(string: "https://api.example.com/v1/")))
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: try SafeArchive.archive(manager))
        XCTAssertEqual(restored.baseURL?.absoluteString, "https://api.example.com/v1/")
        XCTAssertEqual(restored.requestSerializer.value(forHTTPHeaderField: "X-Custom"), "kept")
    }
}
