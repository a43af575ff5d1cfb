import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// `CacheState` alone, no network: the decision for each policy and stored response (the policies'
/// table), then what each end of the transfer delivers, stores and drops.
final class CacheStateTests: LibraryTestCase {
    private let t0 = CacheFixture.t0

    /// The stored responses the decision table uses, at `t0 + 100 s`.
    private func entry(_ kind: String) throws -> StoredResponse? {
        let validators = ["ETag": "\"v1\""]
        switch kind {
        case "none": return nil
        case "fresh": return try CacheFixture.stored(200, ["Cache-Control": "max-age=600"].merging(validators) { $1 })
        case "stale+validator": return try CacheFixture.stored(200, ["Cache-Control": "max-age=10"].merging(validators) { $1 })
        case "stale": return try CacheFixture.stored(200, ["Cache-Control": "max-age=10"])
        case "fresh+no-cache":
            return try CacheFixture.stored(200, ["Cache-Control": "max-age=600, no-cache"].merging(validators) { $1 })
        case "fresh+authenticated":
            return try CacheFixture.stored(200, ["Cache-Control": "max-age=600, public"].merging(validators) { $1 },
                                           varying: [SecondaryKey.authenticatedMarker: ""])
        case "fresh+vary-mismatch":
            return try CacheFixture.stored(200, ["Cache-Control": "max-age=600", "Vary": "Accept"], varying: ["accept": "x/y"])
        default: XCTFail(kind); return nil
        }
    }

    /// `deliver`, `revalidate`, `load` or `fail`, and the status before the transfer ends.
    private func decide(_ policy: URLRequest.CachePolicy, _ kind: String, request fields: [String: String] = [:],
                        method: String = "GET") throws -> String {
        var state = CacheState()
        let request = try CacheFixture.request(fields, policy: policy, method: method)
        let decision = state.consult(request, stored: try entry(kind), now: t0.addingTimeInterval(100))
        switch decision {
        case .deliver(let response, _) where response.statusCode != 200: return "deliver \(response.statusCode) \(state.status)"
        case .deliver: return "deliver \(state.status)"
        case .deliverStale: return "deliverStale \(state.status)"
        case .revalidate: return "revalidate(\(state.addedFields.map(\.name).sorted().joined(separator: ","))) \(state.status)"
        case .load: return "load \(state.status)"
        case .fail: return "fail \(state.status)"
        }
    }

    func testDecisionForEachPolicy() throws {
        let kinds = ["none", "fresh", "stale+validator", "stale", "fresh+no-cache", "fresh+authenticated",
                     "fresh+vary-mismatch"]
        let table: [(URLRequest.CachePolicy, [String])] = [
            (.useProtocolCachePolicy, ["load miss", "deliver hit", "revalidate(If-None-Match) miss", "load miss",
                                       "revalidate(If-None-Match) miss", "revalidate(If-None-Match) miss", "load miss"]),
            (.reloadIgnoringLocalCacheData, ["load miss", "load miss", "load miss", "load miss", "load miss", "load miss",
                                             "load miss"]),
            (.reloadRevalidatingCacheData, ["load miss", "revalidate(If-None-Match) miss", "revalidate(If-None-Match) miss",
                                            "load miss", "revalidate(If-None-Match) miss", "revalidate(If-None-Match) miss",
                                            "load miss"]),
            (.returnCacheDataElseLoad, ["load miss", "deliver hit", "deliver hit", "deliver hit", "deliver hit", "load miss",
                                        "load miss"]),
            (.returnCacheDataDontLoad, ["fail miss", "deliver hit", "deliver hit", "deliver hit", "deliver hit", "fail miss",
                                        "fail miss"]),
        ]
        for (policy, expected) in table {
            for (kind, outcome) in zip(kinds, expected) {
                XCTAssertEqual(try decide(policy, kind), outcome, "policy \(policy.rawValue), stored \(kind)")
            }
        }
    }

    func testRequestDirectivesUnderTheProtocolPolicy() throws {
        let rows: [(String, [String: String], String)] = [
            ("fresh", [:], "deliver hit"),
            ("fresh", ["Cache-Control": "no-cache"], "revalidate(If-None-Match) miss"),
            ("fresh", ["Pragma": "no-cache"], "revalidate(If-None-Match) miss"),
            ("fresh", ["Cache-Control": "max-age=50"], "revalidate(If-None-Match) miss"),   // age 100
            ("fresh", ["Cache-Control": "min-fresh=600"], "revalidate(If-None-Match) miss"),   // 500 s left
            ("stale+validator", ["Cache-Control": "max-stale=100"], "deliver hit"),             // 90 s past
            ("stale+validator", ["Cache-Control": "max-stale=60"], "revalidate(If-None-Match) miss"),
            ("fresh", ["Cache-Control": "only-if-cached"], "deliver hit"),
            ("stale+validator", ["Cache-Control": "only-if-cached"], "deliver 504 miss"),
            ("none", ["Cache-Control": "only-if-cached"], "deliver 504 miss"),
            ("fresh", ["Cache-Control": "no-store"], "deliver hit"),   // no-store forbids storing, not reading
            ("fresh", ["Range": "bytes=0-1"], "load notConsulted"),
            ("fresh", ["If-None-Match": "\"mine\""], "load notConsulted"),
        ]
        for (kind, fields, expected) in rows {
            XCTAssertEqual(try decide(.useProtocolCachePolicy, kind, request: fields), expected, "\(kind) \(fields)")
        }
    }

    func testMethodsTheCacheStaysOutOf() throws {
        XCTAssertEqual(try decide(.useProtocolCachePolicy, "fresh", method: "HEAD"), "load notConsulted")
        XCTAssertEqual(try decide(.useProtocolCachePolicy, "fresh", method: "POST"), "load notConsulted")
        XCTAssertEqual(try decide(.returnCacheDataDontLoad, "fresh", method: "POST"), "fail notConsulted",
                       "a request that may not load never loads")
    }

    func testAFreshHitCarriesItsAge() throws {
        var state = CacheState()
        let stored = try XCTUnwrap(try entry("fresh"))
        guard case .deliver(let response, let body) = state.consult(try CacheFixture.request(), stored: stored,
                                                                    now: t0.addingTimeInterval(100)) else {
            return XCTFail("not delivered")
        }
        XCTAssertEqual(response.value(for: "Age"), "100")
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(body, stored.body)
        XCTAssertTrue(state.transferEnded(with: nil).store == nil, "a hit stores nothing")
        XCTAssertEqual(state.status, .hit)
    }

    /// A hit answers with the head made once with its entry (not built from its fields on every hit),
    /// the entry's own `Age` replaced by the current one; an entry no default request answers from
    /// without the network makes none.
    func testAHitUsesTheHeadMadeWithItsEntryWithOneCurrentAge() throws {
        let url = try CacheFixture.url()
        let fields = ["cache-control": "max-age=3600", "age": "50", "date": CacheFixture.httpDate(t0),
                      "content-type": "text/plain"]
        let facts = FreshnessFacts(fields, now: t0)
        let entry = SQLiteURLCache.Entry(url: url, statusCode: 200, headers: fields, fields: fields, facts: facts,
                                         body: Data("stored".utf8), metadata: .absent, size: 100, storedAt: 0)
        let made = try XCTUnwrap(entry.answeringHead, "an entry with a lifetime makes its answering head once")
        XCTAssertNil(made.value(for: "Age"), "each hit adds its own Age")
        let plain = ["content-type": "text/plain"]
        XCTAssertNil(SQLiteURLCache.Entry(url: url, statusCode: 200, headers: plain, fields: plain,
                                          facts: FreshnessFacts(plain, now: t0), body: Data(), metadata: .absent,
                                          size: 10, storedAt: 0).answeringHead,
                     "an entry with no time to be used without the network makes none")
        let stored = StoredResponse(url: url, statusCode: 200, headers: fields, body: entry.body, varyingRequestHeaders: [:],
                                    requestTime: t0, responseTime: t0, fields: fields, facts: facts,
                                    answeringHead: entry.answeringHead)
        var state = CacheState()
        guard case .deliver(let response, let body) = state.consult(try CacheFixture.request(), stored: stored,
                                                                    now: t0.addingTimeInterval(100)) else {
            return XCTFail("not delivered")
        }
        XCTAssertEqual(response.values(for: "Age"), ["150"], "one Age: the stored 50 plus 100 s in the cache")
        XCTAssertEqual(response.value(for: "Content-Type"), "text/plain")
        XCTAssertEqual(response.value(for: "Cache-Control"), "max-age=3600")
        XCTAssertEqual(response.fields.count, fields.count)
        XCTAssertEqual(body, Data("stored".utf8))
    }

    // MARK: - The transfer's end

    /// A state revalidating the stored `"stale+validator"` response.
    private func revalidating() throws -> (CacheState, StoredResponse) {
        var state = CacheState()
        let stored = try XCTUnwrap(try entry("stale+validator"))
        _ = state.consult(try CacheFixture.request(), stored: stored, now: t0.addingTimeInterval(100))
        return (state, stored)
    }

    func testA304DeliversTheStoredBodyFreshened() throws {
        var (state, stored) = try revalidating()
        let later = t0.addingTimeInterval(100)
        let plan = state.transferEnded(with: try CacheFixture.received(304, ["ETag": "\"v1\"", "Cache-Control": "max-age=300"],
                                                                       body: "", at: later))
        let delivered = try XCTUnwrap(plan.deliver)
        XCTAssertEqual(delivered.response.statusCode, 200)
        XCTAssertEqual(delivered.body, stored.body)
        XCTAssertEqual(delivered.response.value(for: "Cache-Control"), "max-age=300")
        XCTAssertEqual(plan.store?.keys.map(\.absoluteString), [CacheFixture.urlString])
        XCTAssertEqual(plan.store?.stored.responseTime, later)
        XCTAssertEqual(state.status, .revalidated)
        state.storeEnded(stored: false)   // refused by the cache response block: still revalidated
        XCTAssertEqual(state.status, .revalidated)
    }

    func testA304AboutAnotherResponseIsDeliveredAsItCame() throws {
        var (state, _) = try revalidating()
        let plan = state.transferEnded(with: try CacheFixture.received(304, ["ETag": "\"v2\""], body: ""))
        XCTAssertNil(plan.deliver)
        XCTAssertNil(plan.store)
        XCTAssertEqual(plan.remove.map(\.absoluteString), [CacheFixture.urlString], "the stored response cannot be used")
        XCTAssertEqual(state.status, .miss)
    }

    func testAFullResponseToAConditionalRequestReplacesTheStoredOne() throws {
        var (state, _) = try revalidating()
        let plan = state.transferEnded(with: try CacheFixture.received(200, ["ETag": "\"v2\"", "Cache-Control": "max-age=60"]))
        XCTAssertNil(plan.deliver)
        XCTAssertEqual(plan.store.map { String(decoding: $0.stored.body, as: UTF8.self) }, "new body")
        XCTAssertEqual(plan.remove, [], "replaced by the store itself")
        state.storeEnded(stored: true)
        XCTAssertEqual(state.status, .stored)

        var (refusing, _) = try revalidating()
        let noStore = refusing.transferEnded(with: try CacheFixture.received(200, ["Cache-Control": "no-store"]))
        XCTAssertNil(noStore.store)
        XCTAssertEqual(noStore.remove.map(\.absoluteString), [CacheFixture.urlString], "the superseded response goes")
        XCTAssertEqual(refusing.status, .miss)
    }

    func testWhatAFailedOrUnstorableEndStores() throws {
        var failed = try revalidating().0
        XCTAssertNil(failed.transferEnded(with: nil).store, "a failed, cancelled or cut-short transfer stores nothing")
        XCTAssertEqual(failed.status, .miss)

        for (received, name) in [(try CacheFixture.received(200, [:], body: nil), "streamed to an output stream"),
                                 (try CacheFixture.received(200, [:], fits: false), "larger than the cache takes"),
                                 (try CacheFixture.received(206, ["Content-Range": "bytes 0-1/9"]), "partial")] {
            var state = CacheState()
            _ = state.consult(try CacheFixture.request(), stored: nil, now: t0)
            XCTAssertNil(state.transferEnded(with: received).store, name)
            XCTAssertEqual(state.status, .miss, name)
        }
        var refused = CacheState()
        _ = refused.consult(try CacheFixture.request(), stored: nil, now: t0)
        XCTAssertNotNil(refused.transferEnded(with: try CacheFixture.received(200, [:])).store)
        refused.storeEnded(stored: false)
        XCTAssertEqual(refused.status, .miss, "the cache response block refused it")
    }

    /// The library's store reports a store written from its own queue, before or after the run's end
    /// took it: either way the run says `.stored` once it is written, and not before.
    func testAStoreReportedWrittenBeforeOrAfterTheRunsEndSaysStored() throws {
        var later = CacheState()
        _ = later.consult(try CacheFixture.request(), stored: nil, now: t0)
        XCTAssertNotNil(later.transferEnded(with: try CacheFixture.received(200, ["Cache-Control": "max-age=60"])).store)
        later.storeEnded(stored: true, pending: true)
        XCTAssertEqual(later.status, .miss, "not written yet")
        XCTAssertTrue(later.storeWritten())
        XCTAssertEqual(later.status, .stored)
        XCTAssertFalse(later.storeWritten(), "once")

        var earlier = CacheState()
        _ = earlier.consult(try CacheFixture.request(), stored: nil, now: t0)
        XCTAssertNotNil(earlier.transferEnded(with: try CacheFixture.received(200, ["Cache-Control": "max-age=60"])).store)
        XCTAssertFalse(earlier.storeWritten(), "the run has not ended: nothing changes yet")
        earlier.storeEnded(stored: true, pending: true)
        XCTAssertEqual(earlier.status, .stored, "written before the end took it")
        XCTAssertFalse(earlier.storeWritten())
    }

    func testAuthenticatedExchangesStoreOnlyWhatTheResponseAllows() throws {
        var challenged = CacheState()
        _ = challenged.consult(try CacheFixture.request(), stored: nil, now: t0)
        challenged.challengeAnswered()
        XCTAssertNil(challenged.transferEnded(with: try CacheFixture.received(200, ["Cache-Control": "max-age=60"])).store)

        var allowed = CacheState()
        _ = allowed.consult(try CacheFixture.request(["Authorization": "Bearer secret"]), stored: nil, now: t0)
        let plan = allowed.transferEnded(with: try CacheFixture.received(200, ["Cache-Control": "public, max-age=60"]))
        XCTAssertEqual(plan.store?.stored.varyingRequestHeaders, [SecondaryKey.authenticatedMarker: ""],
                       "marked, and the credential is not in the cache")
    }

    /// After any redirect the response is stored under its own URL alone: a stored copy under the
    /// original URL would answer a later request without its redirect block being asked.
    func testARedirectedResponseIsStoredUnderItsOwnURLOnly() throws {
        let target = "https://example.com/moved"
        for hops in [0, 1, 2] {
            var state = CacheState()
            _ = state.consult(try CacheFixture.request(), stored: nil, now: t0)
            for _ in 0..<hops { _ = state.redirected(to: try CacheFixture.url(target)) }
            let url = hops == 0 ? CacheFixture.urlString : target
            let plan = state.transferEnded(with: try CacheFixture.received(200, ["Cache-Control": "max-age=60"], url: url))
            XCTAssertEqual(plan.store?.keys.map(\.absoluteString), [url], "\(hops) redirects")
        }
    }

    func testValidatorsFollowOnlyARedirectToTheStoredResponsesURL() throws {
        let moved = "https://example.com/moved"
        var state = CacheState()
        let stored = try CacheFixture.stored(200, ["ETag": "\"v1\""], url: moved)
        _ = state.consult(try CacheFixture.request(), stored: stored, now: t0)
        XCTAssertEqual(state.addedFields.map { "\($0.name): \($0.value)" }, ["If-None-Match: \"v1\""])
        XCTAssertEqual(state.redirected(to: try CacheFixture.url(moved)).map { "\($0.name): \($0.value)" },
                       ["If-None-Match: \"v1\""])
        XCTAssertTrue(state.redirected(to: try CacheFixture.url("https://example.com/elsewhere")).isEmpty)
    }

    func testACacheStateNeitherStoresNorDropsForARunThatBypassesIt() throws {
        // An unsafe request's invalidation is the operation's (`CacheInvalidation`), outside the state.
        var state = CacheState()
        XCTAssertTrue(state.consult(try CacheFixture.request(method: "DELETE"), stored: nil, now: t0).isLoad)
        let plan = state.transferEnded(with: try CacheFixture.received(204, [:], body: ""))
        XCTAssertEqual(plan.remove, [])
        XCTAssertNil(plan.store)
        XCTAssertEqual(state.status, .notConsulted)

        var resumed = CacheState()
        resumed.continueDownload()
        XCTAssertEqual(resumed.transferEnded(with: try CacheFixture.received(200, [:])).remove, [])
        XCTAssertNil(resumed.transferEnded(with: try CacheFixture.received(200, [:])).store)
    }
}

extension CacheState.Decision {
    var isLoad: Bool {
        if case .load = self { return true }
        return false
    }
}
