import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// A `304` that changes nothing but `Date` of an entry validated before every use keeps the entry
/// (`CacheState.Repeat`): nothing is freshened or stored, and the response delivered is the entry with
/// the `304`'s `Date` (issue 57: a revalidation costs a fetch and a small constant). Any other change,
/// or an entry with a freshness lifetime of its own, is freshened and stored as before.
final class CacheNotModifiedRepeatTests: LibraryTestCase {
    private let url = URL(string: "http://127.0.0.1:9/api/items") ?? URL(fileURLWithPath: "/")

    /// The entry a run found, with `control` and an entity tag, where the library's store holds it.
    private func found(control: String) -> StoredResponse {
        let fields = ["date": "Mon, 01 Jan 2024 00:00:00 GMT", "etag": "\"v1\"", "cache-control": control, "server": "nginx",
                      "content-type": "application/json"]
        return StoredResponse(url: url, statusCode: 200, headers: fields, body: Data("[1,2,3]".utf8),
                              varyingRequestHeaders: [:], requestTime: Date(timeIntervalSinceNow: -60),
                              responseTime: Date(timeIntervalSinceNow: -60), fields: fields,
                              place: StoredResponse.Place(key: url.absoluteString, storedAt: 1))
    }

    /// The plan of a run that found `stored`, revalidated it, and received a `304` with `fields`.
    private func plan(found stored: StoredResponse, notModified fields: [(String, String)]) throws -> CacheState.Plan {
        var machine = CacheState()
        let asked = try XCTUnwrap(CacheRequest(URLRequest(url: url)))
        guard case .revalidate = machine.consult(asked, stored: stored, now: Date()) else {
            XCTFail("the entry should be revalidated")
            return CacheState.Plan()
        }
        let head = ResponseHead(url: url, statusCode: 304, httpVersion: "HTTP/1.1", fields: fields)
        return machine.transferEnded(with: CacheState.Received(head: head, body: Data(), finalRequest: nil, fitsCache: true,
                                                               requestTime: Date(), responseTime: Date()))
    }

    private let later = "Mon, 01 Jan 2024 00:01:00 GMT"

    func testANotModifiedThatChangesOnlyTheDateKeepsTheEntry() throws {
        let plan = try plan(found: found(control: "no-cache"),
                            notModified: [("Server", "nginx"), ("Date", later), ("ETag", "\"v1\""),
                                          ("Cache-Control", "no-cache"), ("Connection", "keep-alive")])
        XCTAssertNil(plan.store, "nothing is freshened or stored")
        XCTAssertEqual(plan.repeated?.place.storedAt, 1, "the entry is kept where the store holds it")
        XCTAssertEqual(plan.deliver?.response.value(for: "Date"), later, "delivered with the 304's Date")
        XCTAssertEqual(plan.deliver?.response.value(for: "ETag"), "\"v1\"")
        XCTAssertEqual(plan.deliver?.body, Data("[1,2,3]".utf8))
        // Should the store have lost the entry meanwhile, the freshened response is stored instead.
        let candidate = try XCTUnwrap(plan.storeCandidate)
        XCTAssertEqual(candidate.stored.fields["date"], later)
        XCTAssertGreaterThan(candidate.stored.responseTime.timeIntervalSinceNow, -5)
    }

    func testANotModifiedThatChangesAFieldIsStored() throws {
        let plan = try plan(found: found(control: "no-cache"),
                            notModified: [("Date", later), ("ETag", "\"v1\""), ("Cache-Control", "no-cache"),
                                          ("X-Version", "2")])
        XCTAssertNil(plan.repeated)
        XCTAssertEqual(plan.store?.stored.fields["x-version"], "2")
        XCTAssertEqual(plan.deliver?.response.value(for: "X-Version"), "2")
    }

    func testAnEntryWithAFreshnessLifetimeIsFreshenedAndStored() throws {
        // Stale (stored a minute ago with ten seconds of life), so revalidated; its times matter later.
        let plan = try plan(found: found(control: "max-age=10"),
                            notModified: [("Date", later), ("ETag", "\"v1\""), ("Cache-Control", "max-age=10")])
        XCTAssertNil(plan.repeated)
        XCTAssertEqual(plan.store?.stored.fields["date"], later)
        XCTAssertGreaterThan(plan.store?.stored.responseTime.timeIntervalSinceNow ?? -100, -5)
    }
}
