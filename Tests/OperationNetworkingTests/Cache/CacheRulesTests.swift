import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// What may be stored (RFC 9111 §3), secondary keys (§4.1), validation and 304 merges (§4.3, §3.2)
/// and invalidation (§4.4), without a network.
final class CacheRulesTests: LibraryTestCase {
    func testWhatMayBeStored() throws {
        let rows: [(String, [String: String], String, Int, [String: String], Bool, Bool)] = [
            // name, request fields, method, status, response fields, authenticated, expected
            ("200 without directives (cacheable by default)", [:], "GET", 200, [:], false, true),
            ("404 by default", [:], "GET", 404, [:], false, true),
            ("201 needs explicit freshness", [:], "GET", 201, [:], false, false),
            ("201 with max-age", [:], "GET", 201, ["Cache-Control": "max-age=5"], false, true),
            ("201 with Expires", [:], "GET", 201, ["Expires": "0"], false, true),
            ("201 with public", [:], "GET", 201, ["Cache-Control": "public"], false, true),
            ("private is a private cache's to store", [:], "GET", 200, ["Cache-Control": "private"], false, true),
            ("response no-store", [:], "GET", 200, ["Cache-Control": "max-age=60, no-store"], false, false),
            ("request no-store", ["Cache-Control": "no-store"], "GET", 200, [:], false, false),
            ("must-understand on an understood status ignores no-store", [:], "GET", 200,
             ["Cache-Control": "must-understand, no-store, max-age=5"], false, true),
            ("must-understand on an unknown status", [:], "GET", 299, ["Cache-Control": "must-understand, max-age=5"], false,
             false),
            ("no-cache is stored (and validated each time)", [:], "GET", 200, ["Cache-Control": "no-cache"], false, true),
            ("206 is never stitched", [:], "GET", 206, ["Cache-Control": "max-age=60"], false, false),
            ("304 is never stored itself", [:], "GET", 304, [:], false, false),
            ("a redirect delivered as the response", [:], "GET", 301, [:], false, false),
            ("HEAD", [:], "HEAD", 200, [:], false, false),
            ("POST", [:], "POST", 200, ["Cache-Control": "max-age=60"], false, false),
            ("caller's Range", ["Range": "bytes=0-9"], "GET", 200, [:], false, false),
            ("Authorization without permission", ["Authorization": "Basic eA=="], "GET", 200, ["Cache-Control": "max-age=60"],
             true, false),
            ("Authorization, public", ["Authorization": "Basic eA=="], "GET", 200, ["Cache-Control": "public"], true, true),
            ("Authorization, must-revalidate", [:], "GET", 200, ["Cache-Control": "must-revalidate"], true, true),
            ("Authorization, s-maxage", [:], "GET", 200, ["Cache-Control": "s-maxage=5"], true, true),
        ]
        for (name, fields, method, status, headers, authenticated, expected) in rows {
            let request = try CacheFixture.request(fields, method: method)
            XCTAssertEqual(Storability.mayStore(request: request, status: status, headers: headers.lowercasedNames,
                                                authenticated: authenticated),
                           expected, name)
        }
    }

    func testStoredFieldsLeaveHopByHopFieldsOut() throws {
        let response = try CacheFixture.response(200, ["Connection": "close, X-Hop", "X-Hop": "1", "Keep-Alive": "timeout=5",
                                                       "Transfer-Encoding": "chunked", "ETag": "\"a\"", "X-Kept": "yes"])
        let fields = Storability.storedFields(of: response.headerFields.lowercasedNames)
        XCTAssertEqual(Set(fields.keys.map { $0.lowercased() }), ["etag", "x-kept"])
        // From the head's bytes (what a transfer stores): two Connection fields name a hop each, repeated
        // fields are joined, Set-Cookie never stored.
        let head = ResponseHead(url: response.url ?? URL(fileURLWithPath: "/"), statusCode: 200, httpVersion: "HTTP/1.1",
                                fields: [("Connection", "close"), ("X-Hop", "1"), ("Connection", "X-Hop"), ("Set-Cookie", "a=b"),
                                         ("Keep-Alive", "timeout=5"), ("ETag", "\"a\""), ("Vary", "Accept"), ("vary", "Cookie")])
        XCTAssertEqual(Storability.storedFields(of: head), ["etag": "\"a\"", "vary": "Accept, Cookie"])
    }

    func testSizeLimitIsAboutFivePercentOfTheCapacity() {
        XCTAssertTrue(CacheStorage.takes(bodyOfSize: 5_000, memoryCapacity: 0, diskCapacity: 100_000))
        XCTAssertFalse(CacheStorage.takes(bodyOfSize: 5_001, memoryCapacity: 0, diskCapacity: 100_000))
        XCTAssertTrue(CacheStorage.takes(bodyOfSize: 5_000, memoryCapacity: 100_000, diskCapacity: 0))
        XCTAssertFalse(CacheStorage.takes(bodyOfSize: 0, memoryCapacity: 0, diskCapacity: 0), "a cache without capacity stores nothing")
    }

    func testVaryMatching() throws {
        let request = try CacheFixture.request(["Accept": "text/html ,application/json;q=0.9", "Accept-Language": "EN-us"])
        let varying = try XCTUnwrap(SecondaryKey.record(vary: "Accept, accept-language, X-Absent", request: request,
                                                        authenticated: false))
        XCTAssertEqual(varying, ["accept": "text/html ,application/json;q=0.9", "accept-language": "EN-us"],
                       "values as sent, names lowercased, absent fields absent")
        let stored = try CacheFixture.stored(200, ["Vary": "Accept, accept-language, X-Absent"], varying: varying)
        let rows: [(String, [String: String], Bool)] = [
            ("the same fields", ["Accept": "text/html ,application/json;q=0.9", "Accept-Language": "EN-us"], true),
            ("whitespace and case normalised", ["Accept": "TEXT/HTML,  application/json; q=0.9", "Accept-Language": "en-US"],
             true),
            ("another value", ["Accept": "application/json", "Accept-Language": "en-us"], false),
            ("list order kept", ["Accept": "application/json;q=0.9, text/html", "Accept-Language": "en-us"], false),
            ("a field missing", ["Accept": "text/html, application/json;q=0.9"], false),
            ("a field the stored request did not have", ["Accept": "text/html,application/json;q=0.9",
                                                         "Accept-Language": "en-us", "X-Absent": "1"], false),
        ]
        for (name, fields, expected) in rows {
            XCTAssertEqual(SecondaryKey.matches(stored, try CacheFixture.request(fields)), expected, name)
        }
        XCTAssertTrue(SecondaryKey.matches(try CacheFixture.stored(200, [:]), try CacheFixture.request(["Accept": "x"])),
                      "no Vary: any request")
    }

    func testVaryStarAndSecretsAreNeverKeys() throws {
        let request = try CacheFixture.request(["Cookie": "session=secret", "Authorization": "Bearer secret"])
        XCTAssertNil(SecondaryKey.record(vary: "*", request: request, authenticated: false))
        XCTAssertNil(SecondaryKey.record(vary: "Accept, Cookie", request: request, authenticated: false))
        XCTAssertNil(SecondaryKey.record(vary: "Authorization", request: request, authenticated: true))
        XCTAssertFalse(SecondaryKey.matches(try CacheFixture.stored(200, ["Vary": "*"]), try CacheFixture.request()),
                       "Vary: * never matches")
        let marked = try XCTUnwrap(SecondaryKey.record(vary: nil, request: request, authenticated: true))
        XCTAssertEqual(marked, [SecondaryKey.authenticatedMarker: ""], "the credential itself is never recorded")
        XCTAssertTrue(SecondaryKey.isAuthenticated(try CacheFixture.stored(200, [:], varying: marked)))
    }

    func testConditionalFields() throws {
        let rows: [([String: String], [String])] = [
            (["ETag": "\"v1\""], ["If-None-Match: \"v1\""]),
            (["ETag": "W/\"v1\""], ["If-None-Match: W/\"v1\""]),
            (["Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT"], ["If-Modified-Since: Wed, 21 Oct 2015 07:28:00 GMT"]),
            (["ETag": "\"v1\"", "Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT"],
             ["If-None-Match: \"v1\"", "If-Modified-Since: Wed, 21 Oct 2015 07:28:00 GMT"]),
            ([:], []),
        ]
        for (headers, expected) in rows {
            let stored = try CacheFixture.stored(200, headers)
            XCTAssertEqual(Validation.conditionalFields(for: stored).map { "\($0.name): \($0.value)" }, expected, "\(headers)")
            XCTAssertEqual(Validation.hasValidator(stored), !expected.isEmpty)
        }
    }

    func testWhichStoredResponseA304IsAbout() throws {
        let strong = try CacheFixture.stored(200, ["ETag": "\"v1\"", "Last-Modified": "Wed, 21 Oct 2015 07:28:00 GMT"])
        let weak = try CacheFixture.stored(200, ["ETag": "W/\"v1\""])
        XCTAssertTrue(Validation.notModified(["etag": "\"v1\""], isAbout: strong))
        XCTAssertFalse(Validation.notModified(["etag": "\"v2\""], isAbout: strong))
        XCTAssertTrue(Validation.notModified(["etag": "W/\"v1\""], isAbout: strong), "weak comparison")
        XCTAssertTrue(Validation.notModified(["etag": "\"v1\""], isAbout: weak), "weak comparison")
        XCTAssertFalse(Validation.notModified(["etag": "\"v1\""], isAbout: try CacheFixture.stored(200, [:])))
        XCTAssertTrue(Validation.notModified(["last-modified": "Wed, 21 Oct 2015 07:28:00 GMT"], isAbout: strong))
        XCTAssertFalse(Validation.notModified(["last-modified": "Thu, 22 Oct 2015 07:28:00 GMT"], isAbout: strong))
        XCTAssertTrue(Validation.notModified([:], isAbout: strong), "a 304 without validators: the one asked about")
    }

    func testA304FreshensTheStoredFields() throws {
        let stored = try CacheFixture.stored(200, ["ETag": "\"v1\"", "Content-Length": "11", "Content-Encoding": "gzip",
                                                   "Cache-Control": "max-age=5", "Age": "100", "X-Old": "kept"])
        let later = CacheFixture.t0.addingTimeInterval(60)
        let notModified = try CacheFixture.response(304, ["ETag": "\"v1\"", "Cache-Control": "max-age=600",
                                                          "Content-Length": "0", "Content-Encoding": "br",
                                                          "Connection": "X-Hop", "X-Hop": "1", "X-New": "added",
                                                          "Date": CacheFixture.httpDate(later)])
        let fresh = Validation.freshened(stored, by: notModified.headerFields, requestTime: later, responseTime: later)
        let fields = fresh.headers
        XCTAssertEqual(fresh.statusCode, 200)
        XCTAssertEqual(fresh.body, stored.body)
        XCTAssertEqual(fields.headerValue("Cache-Control"), "max-age=600")
        XCTAssertEqual(fields.headerValue("Date"), CacheFixture.httpDate(later))
        XCTAssertEqual(fields.headerValue("X-New"), "added")
        XCTAssertEqual(fields.headerValue("X-Old"), "kept")
        XCTAssertEqual(fields.headerValue("Content-Length"), "11", "Content-Length is never updated (§3.2)")
        XCTAssertEqual(fields.headerValue("Content-Encoding"), "gzip", "the stored body's encoding stays")
        XCTAssertNil(fields.headerValue("Age"), "the old Age no longer counts")
        XCTAssertNil(fields.headerValue("X-Hop"))
        XCTAssertEqual(fresh.requestTime, later)
        XCTAssertEqual(fresh.responseTime, later)
        XCTAssertTrue(Freshness(of: fresh, now: later.addingTimeInterval(500)).isFresh)
    }

    func testInvalidationTargets() throws {
        let base = CacheFixture.urlString
        let rows: [(String, String, Int, [String: String], [String])] = [
            ("POST 201 with a same-origin Location", "POST", 201, ["Location": "/items/7"],
             [base, "https://example.com/items/7"]),
            ("PUT 204 with a Content-Location", "PUT", 204, ["Content-Location": "https://example.com/other"],
             [base, "https://example.com/other"]),
            ("another origin's Location is left alone", "POST", 303, ["Location": "https://evil.example/resource"], [base]),
            ("DELETE 404: an error status invalidates nothing", "DELETE", 404, [:], []),
            ("PATCH 500", "PATCH", 500, [:], []),
            ("GET changes nothing", "GET", 200, ["Location": "/items/7"], []),
            ("an unknown method is unsafe", "PURGE", 200, [:], [base]),
        ]
        for (name, method, status, headers, expected) in rows {
            let request = try CacheFixture.urlRequest(method: method)
            let fields = headers.lowercasedNames
            let urls = CacheInvalidation(request)?.invalidatedURLs(status: status, finalURL: request.url,
                                                                   field: { fields[$0] }) ?? []
            XCTAssertEqual(urls.map(\.absoluteString), expected, name)
        }
    }

    /// A hostile server's `Location` or `Content-Location` (control bytes, another origin in disguise,
    /// a huge value) drops at most entries of the responding origin, and never traps.
    func testHostileInvalidationTargetsStayWithinTheOrigin() throws {
        let request = try CacheFixture.urlRequest(method: "POST")
        let invalidation = try XCTUnwrap(CacheInvalidation(request))
        let base = try XCTUnwrap(request.url)
        let hostile = ["/x\r\nSet-Cookie: a=b", "/x\u{0}y", "//evil.example/x", "https://example.com@evil.example/x",
                       "https:\\\\evil.example/x", "javascript:alert(1)", "/" + String(repeating: "a", count: 100_000),
                       "\u{FEFF}/x", "%0d%0a"]
        for value in hostile {
            for name in ["location", "content-location"] {
                let urls = invalidation.invalidatedURLs(status: 201, finalURL: base, field: { $0 == name ? value : nil })
                XCTAssertEqual(urls.first, base, value)
                for url in urls {
                    XCTAssertTrue(Transfer.sameOrigin(url, base), "\(value) invalidated \(url) of another origin")
                    XCTAssertFalse(url.absoluteString.unicodeScalars.contains { $0.value < 0x20 }, "\(value)")
                }
            }
        }
    }
}
