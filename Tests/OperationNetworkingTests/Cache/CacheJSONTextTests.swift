import Foundation
@testable import OperationNetworking
import XCTest

/// The JSON the cache writes by hand for every entry reads back through `JSONDecoder` as what was
/// written, escapes and all, and as `JSONEncoder`'s own output does.
final class CacheJSONTextTests: LibraryTestCase {
    func testHeaderFieldsWithQuotesBackslashesControlCharactersAndUTF8ReadBack() throws {
        let fields = ["content-type": "text/plain; charset=\"utf-8\"", "x-path": #"C:\temp\new"#,
                      "x-control": "a\u{01}b\tc\u{1F}d", "x-utf8": "Grüße, 東京 🌍", "x-empty": "", "": "no name"]
        let written = JSONText.object(fields)
        XCTAssertEqual(try JSONDecoder().decode([String: String].self, from: written), fields)
        XCTAssertEqual(try JSONDecoder().decode([String: String].self, from: JSONText.object([:])), [:])
    }

    /// A hostile server's field value shaped to close the string and add a field of its own (a cookie,
    /// say) stays one value: read back, the object has exactly the fields written.
    func testAValueShapedToInjectAFieldStaysOneValue() throws {
        let fields = ["x-evil": #"v", "set-cookie": "session=stolen"#, "x-evil-2": "a\\\",\"b\":\"c"]
        let read = try JSONDecoder().decode([String: String].self, from: JSONText.object(fields))
        XCTAssertEqual(read, fields)
        XCTAssertNil(read["set-cookie"])
    }

    func testMetadataReadsBackAsJSONEncoderWroteIt() throws {
        let dates = [Date(timeIntervalSinceReferenceDate: 786_754_023.125_732), .distantPast, .distantFuture,
                     Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -1e-7)]
        for (index, date) in dates.enumerated() {
            let metadata = CacheEntryMetadata(requestURL: "https://example.com/a?b=\"c\"\\d", varyingRequestHeaders:
                                                ["accept-language": "fr, en;q=0.5", "x-\(index)": "\u{7}"],
                                              requestTime: date, responseTime: date.addingTimeInterval(0.25),
                                              trust: index.isMultiple(of: 2) ? "pins:abc\u{0}" : nil)
            let byHand = try JSONDecoder().decode(CacheEntryMetadata.self, from: try metadata.encodedJSON())
            let byEncoder = try JSONDecoder().decode(CacheEntryMetadata.self, from: try JSONEncoder().encode(metadata))
            XCTAssertEqual(byHand, metadata, "\(date)")
            XCTAssertEqual(byHand, byEncoder, "\(date)")
        }
    }

    func testADateJSONCannotHoldFallsBackToTheEncoder() throws {
        let metadata = CacheEntryMetadata(requestURL: "http://example.com/", varyingRequestHeaders: [:],
                                          requestTime: Date(timeIntervalSinceReferenceDate: .infinity),
                                          responseTime: .distantPast)
        XCTAssertThrowsError(try metadata.encodedJSON(), "JSONEncoder refuses an infinite date, as it always did")
    }
}
