import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// What a default GET of a response the cache cannot use without the network costs (issue 57: within
/// 3 % of the same GET without a cache, a POST not slowed at all), guarded choice by choice:
/// - a response that only repeats the entry the run found is decided from its head, compared as bytes
///   with the head the entry came with: no entry, no dictionary of its fields is built
///   (`CacheState.Repeat`), and the storage keeps the entry it still holds (`keepRepeated`);
/// - whether a response may be stored is read from its head's `Cache-Control` first (`no-store`
///   decides without another field being looked for);
/// - a successful POST to a URL nothing is stored for writes nothing.
/// callgrind, onet bench of nginx's 1 KiB file at C=1 (the report of the change has the numbers).
final class CacheRepeatFromHeadTests: ServerTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    private let url = URL(string: "http://127.0.0.1:9/api/items") ?? URL(fileURLWithPath: "/")

    /// A head as nginx sends a response without cache fields.
    private func head(date: String, type: String = "application/json") -> ResponseHead {
        ResponseHead(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                     fields: [("Server", "nginx"), ("Date", date), ("Content-Type", type),
                              ("Transfer-Encoding", "chunked"), ("Connection", "keep-alive")])
    }

    /// The entry a run found: the response stored from `head`, where the library's store holds it.
    private func found(_ head: ResponseHead, body: String = "[1,2,3]") -> StoredResponse {
        let fields = Storability.storedFields(of: head.lowercasedFieldDictionary)
        return StoredResponse(url: url, statusCode: 200, headers: fields, body: Data(body.utf8), varyingRequestHeaders: [:],
                              requestTime: Date(), responseTime: Date(), fields: fields, head: head,
                              place: StoredResponse.Place(key: url.absoluteString, storedAt: 1))
    }

    /// The plan of a run that found `stored` and received `received` with `body`.
    private func plan(found stored: StoredResponse, received: ResponseHead, body: String = "[1,2,3]") throws -> CacheState.Plan {
        var machine = CacheState()
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        let asked = try XCTUnwrap(CacheRequest(request))
        XCTAssertEqual(machine.consult(asked, stored: stored, now: Date()).isLoad, true, "stale without a validator: loaded")
        return machine.transferEnded(with: CacheState.Received(head: received, body: Data(body.utf8), finalRequest: nil,
                                                               fitsCache: true, requestTime: Date(), responseTime: Date()))
    }

    func testAResponseThatRepeatsTheEntryFoundBuildsNoEntryOfItsOwn() throws {
        let plan = try plan(found: found(head(date: "Mon, 01 Jan 2024 00:00:00 GMT")),
                            received: head(date: "Mon, 01 Jan 2024 00:00:05 GMT"))
        XCTAssertNil(plan.store, "a repeat builds no stored response")
        XCTAssertEqual(plan.repeated?.place.storedAt, 1)
        XCTAssertEqual(plan.remove, [])
        // Built only if the storage no longer holds the entry (or a cache response block is asked).
        XCTAssertEqual(plan.storeCandidate?.stored.fields["date"], "Mon, 01 Jan 2024 00:00:05 GMT")
    }

    func testAResponseThatDiffersIsStored() throws {
        let stored = found(head(date: "Mon, 01 Jan 2024 00:00:00 GMT"))
        for (received, body) in [(head(date: "Mon, 01 Jan 2024 00:00:05 GMT", type: "text/plain"), "[1,2,3]"),
                                 (head(date: "Mon, 01 Jan 2024 00:00:05 GMT"), "[1,2,4]")] {
            let plan = try plan(found: stored, received: received, body: body)
            XCTAssertNil(plan.repeated)
            XCTAssertEqual(plan.store?.stored.body, Data(body.utf8))
        }
    }

    func testNoStoreDecidesWithoutAskingForExpires() throws {
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        let asked = try XCTUnwrap(CacheRequest(request))
        var askedForExpires = false
        XCTAssertFalse(Storability.mayStore(request: asked, status: 200, control: CacheControl("no-store"),
                                            hasExpires: { askedForExpires = true; return true }, authenticated: false))
        XCTAssertTrue(Storability.mayStore(request: asked, status: 200, control: CacheControl(nil),
                                           hasExpires: { askedForExpires = true; return false }, authenticated: false))
        XCTAssertFalse(askedForExpires, "a status cacheable by default decides before Expires is looked for")
    }

    /// Over loopback: the first GET stores the response with the head it came with; the second, the
    /// same but its `Date`, keeps that entry (not written again) and reports it stored.
    func testARepeatedGETKeepsTheEntryWithTheHeadItCameWith() throws {
        let cache = SQLiteURLCache(memoryCapacity: 1 << 20, diskCapacity: 20 << 20, directory: directory)
        let path = "/status/200"
        let key = CacheEntryMetadata.key(for: server.url(path))
        func get() -> HTTPRequestOperation {
            let operation = HTTPRequestOperation(request: request(path))
            operation.urlCache = cache
            XCTAssertTrue(run(operation).isSuccess)
            cache.flush()
            return operation
        }
        _ = get()
        let first = try XCTUnwrap(cache.entry(forKey: key))
        XCTAssertNotNil(first.head, "the entry keeps the head it came with")
        let batches = cache.batchesTried
        let second = get()
        XCTAssertEqual(cache.entry(forKey: key)?.storedAt, first.storedAt, "the entry stays")
        XCTAssertEqual(cache.batchesTried, batches + 1, "only the lookups' recency is written")
        XCTAssertEqual(second.metrics?.cacheStatus, .stored)
    }

    /// A successful POST invalidates its URL; when nothing is stored for it, nothing is written.
    func testASuccessfulPostToAURLWithNothingStoredWritesNothing() throws {
        let cache = SQLiteURLCache(memoryCapacity: 1 << 20, diskCapacity: 20 << 20, directory: directory)
        // First of all, before the cache read its keys: it reads them rather than write a removal blind.
        let first = HTTPRequestOperation(request: request("/upload", method: "POST"))
        first.urlCache = cache
        XCTAssertTrue(run(first).isSuccess)
        cache.flush()
        XCTAssertEqual(cache.batchesTried, 0, "no batch for a POST to a cache that had not read its keys")
        let get = HTTPRequestOperation(request: request("/status/200"))
        get.urlCache = cache
        XCTAssertTrue(run(get).isSuccess)
        cache.flush()
        let batches = cache.batchesTried
        let post = HTTPRequestOperation(request: request("/upload", method: "POST"))
        post.urlCache = cache
        XCTAssertTrue(run(post).isSuccess)
        cache.flush()
        XCTAssertEqual(cache.batchesTried, batches, "no batch for a POST")
    }
}
