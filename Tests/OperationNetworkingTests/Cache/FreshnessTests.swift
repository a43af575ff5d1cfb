import Foundation
@testable import OperationNetworking
import XCTest

/// Freshness lifetime, current age and the request's freshness directives (RFC 9111 §4.2, §5.2.1),
/// without a network.
final class FreshnessTests: LibraryTestCase {
    private let t0 = CacheFixture.t0

    private func date(_ offset: TimeInterval) -> String { CacheFixture.httpDate(t0.addingTimeInterval(offset)) }

    private func freshness(_ headers: [String: String], status: Int = 200, requested: TimeInterval = 0,
                           received: TimeInterval = 0, now: TimeInterval) -> Freshness {
        Freshness(status: status, headers: headers.lowercasedNames, requestTime: t0.addingTimeInterval(requested),
                  responseTime: t0.addingTimeInterval(received), now: t0.addingTimeInterval(now))
    }

    func testLifetime() {
        let rows: [(String, Int, [String: String], TimeInterval, Bool)] = [
            ("max-age", 200, ["Cache-Control": "max-age=100", "Date": date(0)], 100, true),
            ("max-age beats Expires", 200, ["Cache-Control": "max-age=10", "Expires": date(1000), "Date": date(0)], 10, true),
            ("Expires − Date", 200, ["Expires": date(300), "Date": date(0)], 300, true),
            ("Expires − response time without Date", 200, ["Expires": date(300)], 300, true),
            ("Expires before Date", 200, ["Expires": date(-60), "Date": date(0)], 0, true),
            ("Expires: 0 is in the past", 200, ["Expires": "0", "Date": date(0)], 0, true),
            ("invalid max-age is stale", 200, ["Cache-Control": "max-age=soon", "Expires": date(300)], 0, true),
            ("conflicting max-age is stale", 200, ["Cache-Control": "max-age=5, max-age=500"], 0, true),
            ("heuristic: 10 % since Last-Modified", 200, ["Last-Modified": date(-1000), "Date": date(0)], 100, false),
            ("heuristic for a 404", 404, ["Last-Modified": date(-1000), "Date": date(0)], 100, false),
            ("heuristic for a 301", 301, ["Last-Modified": date(-1000), "Date": date(0)], 100, false),
            ("no heuristic for a 201", 201, ["Last-Modified": date(-1000), "Date": date(0)], 0, false),
            ("no heuristic for a 302", 302, ["Last-Modified": date(-1000), "Date": date(0)], 0, false),
            ("no heuristic beside Expires", 200, ["Expires": date(5), "Last-Modified": date(-1000), "Date": date(0)], 5, true),
            ("Last-Modified in the future", 200, ["Last-Modified": date(1000), "Date": date(0)], 0, false),
            ("nothing to go by", 200, ["Date": date(0)], 0, false),
            ("s-maxage is a shared cache's", 200, ["Cache-Control": "s-maxage=100", "Date": date(0)], 0, false),
        ]
        for (name, status, headers, lifetime, explicit) in rows {
            let result = freshness(headers, status: status, now: 0)
            XCTAssertEqual(result.lifetime, lifetime, name)
            XCTAssertEqual(result.isExplicit, explicit, name)
        }
    }

    func testCurrentAge() {
        let rows: [(String, [String: String], TimeInterval, TimeInterval, TimeInterval, TimeInterval)] = [
            // name, headers, request time, response time, now, expected age
            ("resident time only", ["Date": date(0)], 0, 0, 50, 50),
            ("Age counts", ["Date": date(0), "Age": "30"], 0, 0, 0, 30),
            ("Age plus the response delay", ["Date": date(0), "Age": "10"], -5, 0, 0, 15),
            ("apparent age from a Date in the past", ["Date": date(-20)], 0, 0, 0, 20),
            ("the larger of apparent and corrected age", ["Date": date(-20), "Age": "5"], 0, 0, 0, 20),
            ("a Date ahead of the clock counts as none", ["Date": date(100)], 0, 0, 10, 10),
            ("invalid Age is ignored", ["Date": date(0), "Age": "old"], 0, 0, 0, 0),
            ("a list-valued Age counts by its first member", ["Date": date(0), "Age": "10, 20"], 0, 0, 0, 10),
            ("no Date: the response time stands in", [:], -2, 0, 3, 5),
        ]
        for (name, headers, requested, received, now, expected) in rows {
            XCTAssertEqual(freshness(headers, requested: requested, received: received, now: now).currentAge, expected, name)
        }
    }

    func testFreshUntilAgeReachesLifetime() {
        let headers = ["Cache-Control": "max-age=100", "Date": date(0)]
        XCTAssertTrue(freshness(headers, now: 99).isFresh)
        XCTAssertFalse(freshness(headers, now: 100).isFresh)
    }

    func testRequestDirectives() {
        let fresh = freshness(["Cache-Control": "max-age=100", "Date": date(0)], now: 50)   // 50 s left
        let stale = freshness(["Cache-Control": "max-age=100", "Date": date(0)], now: 130)  // 30 s past
        let none = CacheControl.empty
        let rows: [(String, Freshness, String, String?, Bool)] = [
            ("fresh", fresh, "", nil, true),
            ("request max-age=0", fresh, "max-age=0", nil, false),
            ("request max-age above the age", fresh, "max-age=60", nil, true),
            ("request max-age below the age", fresh, "max-age=40", nil, false),
            ("min-fresh within what is left", fresh, "min-fresh=40", nil, true),
            ("min-fresh beyond what is left", fresh, "min-fresh=60", nil, false),
            ("stale", stale, "", nil, false),
            ("stale, max-stale without a limit", stale, "max-stale", nil, true),
            ("stale, within max-stale", stale, "max-stale=30", nil, true),
            ("stale, beyond max-stale", stale, "max-stale=29", nil, false),
            ("stale, max-stale but must-revalidate", stale, "max-stale", "must-revalidate", false),
            ("stale, max-stale and proxy-revalidate (a shared cache's)", stale, "max-stale", "proxy-revalidate", true),
        ]
        for (name, subject, request, response, expected) in rows {
            XCTAssertEqual(subject.satisfies(CacheControl(request), responseControl: response.map { CacheControl($0) } ?? none),
                           expected, name)
        }
    }
}
