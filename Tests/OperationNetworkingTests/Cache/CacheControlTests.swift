import Foundation
@testable import OperationNetworking
import XCTest

/// Cache-Control parsing (RFC 9111 §5.2, §4.2.1 for invalid and repeated directives), `Pragma:
/// no-cache` on requests, and HTTP dates (RFC 9110 §5.6.7), without a network.
final class CacheControlTests: LibraryTestCase {
    func testDeltaSecondsDirectives() {
        let rows: [(String?, CacheControl.Seconds)] = [
            ("max-age=60", .valid(60)),
            ("MAX-AGE=60", .valid(60)),                       // names compare without case
            ("max-age=\"60\"", .valid(60)),                   // quoted-string form accepted (§5.2)
            ("  max-age = 60 ", .valid(60)),
            ("public, max-age=0", .valid(0)),
            ("max-age", .invalid),                            // argument missing
            ("max-age=abc", .invalid),
            ("max-age=-1", .invalid),
            ("max-age=1.5", .invalid),
            ("max-age=60, max-age=60", .valid(60)),           // the same value again changes nothing
            ("max-age=60, max-age=120", .invalid),            // repeated with another value: stale (§4.2.1)
            ("max-age=99999999999999999999999", .valid(CacheControl.maximumDeltaSeconds)),   // §1.2.2
            ("no-cache", .absent),
            (nil, .absent),
            ("", .absent),
        ]
        for (field, expected) in rows {
            XCTAssertEqual(CacheControl(field).seconds("max-age"), expected, "\(field ?? "nil")")
        }
    }

    func testPresenceQuotedListsAndUnknownDirectives() {
        let control = CacheControl("no-cache=\"Set-Cookie, X-Token\", private ,max-age=5, community=\"UCI\", no-store")
        XCTAssertTrue(control.has("no-cache"))
        XCTAssertTrue(control.has("private"))
        XCTAssertTrue(control.has("no-store"))
        XCTAssertTrue(control.has("community"))
        XCTAssertEqual(control.seconds("max-age"), .valid(5), "the comma inside the quotes did not split the list")
        XCTAssertFalse(control.has("x-token"))
        XCTAssertFalse(control.has("must-revalidate"))
    }

    func testMaxStale() {
        XCTAssertEqual(CacheControl("max-stale").maxStale, .any)
        XCTAssertEqual(CacheControl("max-stale=30").maxStale, .limit(30))
        XCTAssertEqual(CacheControl("max-stale=soon").maxStale, .absent, "an invalid max-stale is ignored")
        XCTAssertEqual(CacheControl("max-age=5").maxStale, .absent)
    }

    func testPragmaNoCacheCountsOnlyWithoutCacheControl() throws {
        XCTAssertTrue(try CacheFixture.request(["Pragma": "no-cache"]).control.has("no-cache"))
        XCTAssertTrue(try CacheFixture.request(["Pragma": "foo, NO-CACHE"]).control.has("no-cache"))
        XCTAssertFalse(try CacheFixture.request(["Pragma": "no-cache", "Cache-Control": "max-age=5"]).control.has("no-cache"))
        XCTAssertFalse(try CacheFixture.request(["Pragma": "x-other"]).control.has("no-cache"))
    }

    func testRequestFacts() throws {
        let plain = try CacheFixture.request()
        XCTAssertTrue(plain.usesCache)
        XCTAssertEqual(plain.headers["accept-encoding"], Transfer.offeredEncodings, "the field the transfer adds")
        XCTAssertEqual(try CacheFixture.request(["Accept-Encoding": "identity"]).headers["accept-encoding"], "identity")
        for field in ["Range", "If-None-Match", "If-Modified-Since", "If-Range", "If-Match", "If-Unmodified-Since"] {
            XCTAssertFalse(try CacheFixture.request([field: "x"]).usesCache, field)
        }
        for method in ["HEAD", "POST", "PUT", "DELETE"] {
            XCTAssertFalse(try CacheFixture.request(method: method).usesCache, method)
        }
        XCTAssertNotNil(CacheInvalidation(try CacheFixture.urlRequest(method: "post")), "a method in any case")
        XCTAssertNil(CacheInvalidation(try CacheFixture.urlRequest(method: "OPTIONS")), "a safe method changes nothing")
        XCTAssertTrue(try CacheFixture.request(["Authorization": "Bearer x"]).hasAuthorization)
    }

    func testHTTPDates() {
        let moment = Date(timeIntervalSince1970: 784_111_777)
        let rows: [(String, Date?)] = [
            ("Sun, 06 Nov 1994 08:49:37 GMT", moment),        // IMF-fixdate
            ("Sunday, 06-Nov-94 08:49:37 GMT", moment),       // RFC 850
            ("Sun Nov  6 08:49:37 1994", moment),             // asctime
            ("Tue, 29 Feb 2000 00:00:00 GMT", Date(timeIntervalSince1970: 951_782_400)),
            ("Thu, 01 Jan 1970 00:00:00 GMT", Date(timeIntervalSince1970: 0)),
            ("0", nil),
            ("", nil),
            ("Sun, 06 Nov 1994 08:49:37 PST", nil),
            ("Tue, 29 Feb 2001 00:00:00 GMT", nil),
            ("Sun, 06 Nov 1994 24:00:00 GMT", nil),
            ("Sun, 06 Nov 1994 8:49:37 GMT", nil),
            ("Sun, 06 Foo 1994 08:49:37 GMT", nil),
            ("tomorrow", nil),
            // Names in any case (every browser reads them so); GMT alone as the zone.
            ("THU, 18 AUG 2050 02:01:18 gMT", Date(timeIntervalSince1970: 2_544_400_878)),
            ("Thu, 18 Aug 2050 02:01:18 UTC", nil),
            // Shapes of none of the three forms: no date (for Expires, a time in the past).
            ("Thu, 18 Aug 50 02:01:18 GMT", nil),
            ("Thu 18 Aug 2050 02:01:18 GMT", nil),
            ("Thu, 18  Aug  2050 02:01:18 GMT", nil),
            ("Thu, 18-Aug-2050 02:01:18 GMT", nil),
            ("Thu, 18 Aug 2050 02.01.18 GMT", nil),
            ("Thu, 18 Aug 2050 2:01:18 GMT", nil),
            ("Sunday, 06 Nov 1994 08:49:37 GMT", nil),
            ("Sun, 06-Nov-94 08:49:37 GMT", nil),
            (" Sun, 06 Nov 1994 08:49:37 GMT", nil),
        ]
        for (text, expected) in rows {
            XCTAssertEqual(HTTPDate.parse(text), expected, text)
        }
    }

    func testTwoDigitYearsAreNeverMoreThanFiftyYearsAhead() {
        let now = CacheFixture.t0   // November 2023
        XCTAssertEqual(HTTPDate.parse("Tuesday, 01-Jan-30 00:00:00 GMT", now: now), Date(timeIntervalSince1970: 1_893_456_000))
        XCTAssertEqual(HTTPDate.parse("Thursday, 01-Jan-70 00:00:00 GMT", now: now), Date(timeIntervalSince1970: 3_155_760_000),
                       "47 years ahead")
        XCTAssertEqual(HTTPDate.parse("Tuesday, 01-Jan-80 00:00:00 GMT", now: now), Date(timeIntervalSince1970: 315_532_800),
                       "57 years ahead: the past century")
        XCTAssertEqual(HTTPDate.parse("Thursday, 01-Jan-99 00:00:00 GMT", now: now), Date(timeIntervalSince1970: 915_148_800))
    }
}
