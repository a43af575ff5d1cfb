import Foundation
@testable import OperationNetworking
import XCTest

/// AFN 2.7's query string, byte for byte.
final class QueryStringTests: LibraryTestCase {
    func testAFNPublishedExamples() throws {
        XCTAssertEqual(try QueryString.encode(["foo": "bar", "baz": [1, 2, 3]]),
                       "baz%5B%5D=1&baz%5B%5D=2&baz%5B%5D=3&foo=bar")
        XCTAssertEqual(try QueryString.encode(["key1": "value1", "key2": ["key": [1, "value"]]]),
                       "key1=value1&key2%5Bkey%5D%5B%5D=1&key2%5Bkey%5D%5B%5D=value")
    }

    func testEscapingSet() throws {
        XCTAssertEqual(QueryString.escape(" :#[]@!$&'()*+,;=/?"),
                       "%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?")
        XCTAssertEqual(QueryString.escape("%20%21"), "%2520%2521")
        XCTAssertEqual(QueryString.escape("ä"), "%C3%A4")
        XCTAssertEqual(QueryString.escape("-._~AZaz09"), "-._~AZaz09")
    }

    func testEmojiIsNeverSplit() throws {
        let text = String(repeating: "👨‍👩‍👧‍👦a", count: 40)
        let escaped = QueryString.escape(text)
        XCTAssertEqual(escaped.removingPercentEncoding, text)
    }

    func testKeysAreSortedAndNestedDictionariesFlattened() throws {
        XCTAssertEqual(try QueryString.encode(["b": "1", "a": ["d": "2", "c": "3"], "_": "4", "A": "5"]),
                       "A=5&_=4&a%5Bc%5D=3&a%5Bd%5D=2&b=1")
    }

    func testSetsAreSortedAndNullIsTheKeyAlone() throws {
        XCTAssertEqual(try QueryString.encode(["s": Set(["b", "a"]), "n": NSNull()]), "n&s=a&s=b")
    }

    func testBooleansRenderAsNSNumberDid() throws {
        XCTAssertEqual(try QueryString.encode(["t": true, "f": false]), "f=0&t=1")
    }

    /// A Swift literal mixing integers and decimals is a `[String: Double]`; AFN (NSNumber) sent the
    /// integers without `.0`, booleans as 1/0 and large integers exactly.
    func testNumbersRenderAsNSNumberDid() throws {
        let literal: Any = ["count": 3, "ratio": 1.5]
        XCTAssertTrue(literal is [String: Double], "the premise: Swift made every value a Double")
        XCTAssertEqual(try QueryString.encode(literal), "count=3&ratio=1.5")
        XCTAssertEqual(try QueryString.encode(["big": Int64.max, "huge": UInt64.max, "negative": -42, "zero": 0.0]),
                       "big=9223372036854775807&huge=18446744073709551615&negative=-42&zero=0")
        XCTAssertEqual(try QueryString.encode(["tenth": 0.1, "float": Float(1.1), "sum": 0.1 + 0.2, "large": 1e20]),
                       "float=1.1&large=1e%2B20&sum=0.3&tenth=0.1")
        let numbers: Any = ["t": NSNumber(value: true), "i": NSNumber(value: 7), "d": NSNumber(value: 2.0),
                            "u": NSNumber(value: UInt64.max)]
        XCTAssertEqual(try QueryString.encode(numbers), "d=2&i=7&t=1&u=18446744073709551615")
        let json = try JSONSerialization.jsonObject(with: Data(#"{"n":5,"b":true,"r":2.5}"#.utf8))
        XCTAssertEqual(try QueryString.encode(json), "b=1&n=5&r=2.5")
    }

    func testNonFiniteNumbersAreAnEncodingError() {
        for value in [Double.nan, .infinity, -.infinity] {
            XCTAssertThrowsError(try QueryString.encode(["x": value])) { error in
                XCTAssertEqual((error as NSError).domain, RequestSerializationErrorDomain)
                XCTAssertEqual((error as NSError).code, RequestSerializationErrorCode.unencodableParameters.rawValue)
            }
        }
        XCTAssertThrowsError(try HTTPRequestSerializer().request(method: "GET", urlString: "http://h/x",
                                                                 parameters: ["ratio": Double.nan]))
    }
}
