import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// What a revalidation costs besides its fetch (issue 57): a `304` is compared with the stored head in
/// place (`ResponseHead.hasSameValues`), never with an answer the fields by name would not give, and
/// the conditional fields go with the transfer as header lines (`Transfer.conditionalFields`), not on a
/// copy of the request.
final class CacheRevalidationInPlaceTests: LibraryTestCase {
    private let url = URL(string: "http://127.0.0.1:9/items") ?? URL(fileURLWithPath: "/")

    private func head(_ status: Int, _ fields: [(String, String)]) -> ResponseHead {
        ResponseHead(url: url, statusCode: status, httpVersion: "HTTP/1.1", fields: fields)
    }

    /// The answer by name: every field the cache keeps of the `304` (but those not compared) is the
    /// stored one's.
    private func repeatsByName(stored: ResponseHead, notModified: ResponseHead) -> Bool {
        let kept = Storability.storedFields(of: stored)
        return Storability.storedFields(of: notModified).allSatisfy { name, value in
            Validation.fieldsNotComparedOn304.contains(name) || kept[name] == value
        }
    }

    func testNginxsNotModifiedIsComparedInPlace() {
        let stored = head(200, [("Server", "nginx"), ("Date", "Mon, 07 Dec 2026 20:37:11 GMT"),
                                ("Content-Type", "application/octet-stream"), ("Content-Length", "1024"),
                                ("Last-Modified", "Mon, 07 Dec 2026 20:27:33 GMT"), ("Connection", "keep-alive"),
                                ("ETag", "\"6b1716b5-400\""), ("Cache-Control", "no-cache"), ("Accept-Ranges", "bytes")])
        let notModified = head(304, [("Server", "nginx"), ("Date", "Mon, 07 Dec 2026 20:38:00 GMT"),
                                     ("Last-Modified", "Mon, 07 Dec 2026 20:27:33 GMT"), ("Connection", "keep-alive"),
                                     ("ETag", "\"6b1716b5-400\""), ("Cache-Control", "no-cache")])
        XCTAssertTrue(stored.hasSameValues(forFieldsOf: notModified, except: Validation.fieldsNotComparedOn304),
                      "the usual 304 is settled from the heads' bytes")
        let changed = head(304, [("Date", "Mon, 07 Dec 2026 20:38:00 GMT"), ("ETag", "\"6b1716b5-400\""),
                                 ("Cache-Control", "max-age=60")])
        XCTAssertFalse(stored.hasSameValues(forFieldsOf: changed, except: Validation.fieldsNotComparedOn304))
        XCTAssertFalse(repeatsByName(stored: stored, notModified: changed))
    }

    /// Thousands of made-up pairs of heads, with repeated names, names in other cases, `Connection`
    /// naming fields, and fields never stored: whenever the comparison in place says the `304` repeats
    /// the stored head, the comparison by name says so too (it may say so where the one in place cannot
    /// tell; then the fields are compared by name).
    func testTheComparisonInPlaceNeverDisagreesWithTheFieldsByName() {
        let names = ["ETag", "etag", "Cache-Control", "Server", "Date", "Connection", "Keep-Alive", "X-A", "x-a",
                     "Set-Cookie", "Content-Length", "Last-Modified"]
        let values = ["1", "2", "\"v1\"", "keep-alive", "x-a", "close, X-A", "server"]
        var random = SplitMix64(seed: 57)
        var settledInPlace = 0
        for _ in 0..<5_000 {
            let storedFields = (0..<random.below(7)).map { _ in (random.pick(names), random.pick(values)) }
            // Mostly the stored fields again (some values changed), with a few of its own.
            var notModifiedFields = storedFields.filter { _ in random.below(4) != 0 }
                .map { random.below(6) == 0 ? ($0.0, random.pick(values)) : $0 }
            for _ in 0..<random.below(3) { notModifiedFields.append((random.pick(names), random.pick(values))) }
            let stored = head(200, storedFields), notModified = head(304, notModifiedFields)
            guard stored.hasSameValues(forFieldsOf: notModified, except: Validation.fieldsNotComparedOn304) else { continue }
            settledInPlace += 1
            XCTAssertTrue(repeatsByName(stored: stored, notModified: notModified),
                          "in place said repeated: stored \(storedFields), 304 \(notModifiedFields)")
        }
        XCTAssertGreaterThan(settledInPlace, 500, "the pairs exercise the comparison in place")
    }

    /// The cache's fields are header lines of their own, sent in place of the request's fields of the
    /// same name (any spelling); the request itself is not changed to carry them.
    func testTheConditionalFieldsAreHeaderLinesInPlaceOfTheRequestsOwn() {
        var request = URLRequest(url: url)
        request.setValue("\"app\"", forHTTPHeaderField: "if-none-match")
        request.setValue("yes", forHTTPHeaderField: "X-Kept")
        let lines = HopHeaderLines(request: request, body: .none, offersEncodings: false, continuation: nil,
                                   added: [("If-None-Match", "\"v1\"")]).lines
        XCTAssertEqual(lines.filter { asciiCaseInsensitiveEquals($0.name, "If-None-Match") }.map(\.curlLine),
                       ["If-None-Match: \"v1\""])
        XCTAssertTrue(lines.contains { $0.curlLine == "X-Kept: yes" })
        XCTAssertEqual(request.value(forHTTPHeaderField: "If-None-Match"), "\"app\"")
    }

    /// A validator that would break the request's head (an entity tag with CR, LF or NUL, from a planted
    /// or damaged entry) is checked as every field is: the hop is refused (`invalidHeader`), never sent.
    func testAConditionalFieldThatWouldBreakTheHeadIsRefused() {
        for value in ["\"v1\"\r\nX-Injected: 1", "\"v1\"\n", "\"v1\u{0}\""] {
            let lines = HopHeaderLines(request: URLRequest(url: url), body: .none, offersEncodings: false, continuation: nil,
                                       added: [("If-None-Match", value)])
            XCTAssertEqual(lines.invalidFieldName, "If-None-Match", "\(value.debugDescription)")
        }
    }
}

private extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}
