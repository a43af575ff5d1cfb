import Foundation
@testable import OperationNetworking
import XCTest

/// AFN 2.7's query string, byte for byte (afn2-api.md §6.6).
final class QueryStringTests: XCTestCase {
    func testAFNPublishedExamples() {
        XCTAssertEqual(QueryString.encode(["foo": "bar", "baz": [1, 2, 3]]),
                       "baz%5B%5D=1&baz%5B%5D=2&baz%5B%5D=3&foo=bar")
        XCTAssertEqual(QueryString.encode(["key1": "value1", "key2": ["key": [1, "value"]]]),
                       "key1=value1&key2%5Bkey%5D%5B%5D=1&key2%5Bkey%5D%5B%5D=value")
    }

    func testEscapingSet() {
        XCTAssertEqual(QueryString.escape(" :#[]@!$&'()*+,;=/?"),
                       "%20%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D/?")
        XCTAssertEqual(QueryString.escape("%20%21"), "%2520%2521")
        XCTAssertEqual(QueryString.escape("ä"), "%C3%A4")
        XCTAssertEqual(QueryString.escape("-._~AZaz09"), "-._~AZaz09")
    }

    func testEmojiIsNeverSplit() {
        let text = String(repeating: "👨‍👩‍👧‍👦a", count: 40)
        let escaped = QueryString.escape(text)
        XCTAssertEqual(escaped.removingPercentEncoding, text)
    }

    func testKeysAreSortedAndNestedDictionariesFlattened() {
        XCTAssertEqual(QueryString.encode(["b": "1", "a": ["d": "2", "c": "3"], "_": "4", "A": "5"]),
                       "A=5&_=4&a%5Bc%5D=3&a%5Bd%5D=2&b=1")
    }

    func testSetsAreSortedAndNullIsTheKeyAlone() {
        XCTAssertEqual(QueryString.encode(["s": Set(["b", "a"]), "n": NSNull()]), "n&s=a&s=b")
    }

    func testBooleansRenderAsNSNumberDid() {
        XCTAssertEqual(QueryString.encode(["t": true, "f": false]), "f=0&t=1")
    }
}
