import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The cache on the wire against the test server's `/cache/NAME` route: what reaches the server
/// (how many requests, with which conditional fields) and what the operation delivers, for freshness,
/// revalidation, each policy and `Vary`.
final class CacheWireTests: CacheTestCase {
    func testAFreshResponseAnswersWithoutTheNetwork() throws {
        let path = "/cache/fresh?cc=max-age=600"
        let first = fetch(path)
        let serializer = RecordingSerializer()
        let progress = Recorder<[Int64]>()
        let second = fetch(path) { operation in
            operation.responseSerializer = serializer
            operation.setDownloadProgressBlock { bytes, total, expected in progress.append([Int64(bytes), total, expected]) }
        }
        XCTAssertEqual(requests(to: "/cache/fresh").count, 1, "the second answer came from the cache")
        XCTAssertEqual(text(first), "fresh v1 #1")
        XCTAssertEqual(text(second), "fresh v1 #1")
        XCTAssertEqual(first.metrics?.cacheStatus, .stored)
        XCTAssertEqual(second.metrics?.cacheStatus, .hit)
        XCTAssertEqual(second.metrics?.attempts, 0)
        XCTAssertEqual(second.response?.statusCode, 200)
        XCTAssertNotNil(second.response?.value(forHTTPHeaderField: "Age"), "a stored response answers with its Age (§4)")
        XCTAssertEqual(serializer.calls.map(\.status), [200])
        XCTAssertEqual(serializer.calls.first?.body, Data("fresh v1 #1".utf8), "the serializer saw the stored body")
        XCTAssertEqual(second.responseObject as? Data, Data("fresh v1 #1".utf8))
        XCTAssertTrue(eventually { progress.count == 1 })
        XCTAssertEqual(progress.all, [[11, 11, 11]], "the body's length, once")
    }

    func testAStaleResponseIsRevalidatedAndA304DeliversTheStoredBodyAs200() throws {
        let path = "/cache/etag?cc=max-age=0&etag=strong"
        let first = fetch(path)
        let serializer = RecordingSerializer()
        let progress = Recorder<Int64>()
        let second = fetch(path) { operation in
            operation.responseSerializer = serializer
            operation.setDownloadProgressBlock { _, total, _ in progress.append(total) }
        }
        let seen = requests(to: "/cache/etag")
        XCTAssertEqual(seen.count, 2)
        XCTAssertNil(seen[0].header("If-None-Match"))
        XCTAssertEqual(seen[1].header("If-None-Match"), "\"etag-v1\"", "revalidated with the stored entity tag")
        XCTAssertEqual(first.metrics?.cacheStatus, .stored)
        XCTAssertEqual(second.metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(second.response?.statusCode, 200, "the 304 is delivered as the 200 it stands for")
        XCTAssertEqual(text(second), "etag v1 #1", "the stored body")
        XCTAssertTrue(second.error == nil, "\(String(describing: second.error))")
        XCTAssertEqual(serializer.calls.map(\.status), [200])
        XCTAssertEqual(serializer.calls.first?.body, Data("etag v1 #1".utf8))
        XCTAssertTrue(eventually { progress.all.last == 10 }, "\(progress.all)")
        XCTAssertEqual(second.request.value(forHTTPHeaderField: "If-None-Match"), nil, "the operation's request is unchanged")
        XCTAssertEqual(second.currentRequest.value(forHTTPHeaderField: "If-None-Match"), nil)
    }

    /// The cache's conditional fields go with the transfer (`Transfer.conditionalFields`); the request
    /// the transfer holds is the operation's, never a copy changed to carry them (issue 57: that copy
    /// cost 8k instructions a revalidation).
    func testARevalidationsFieldsGoWithTheTransferNotOnACopyOfTheRequest() throws {
        let path = "/cache/held?cc=no-cache&etag=strong&revalidationDelayMs=3000"
        fetch(path)
        var request = self.request(path)
        request.setValue("kept", forHTTPHeaderField: "X-App")
        let operation = HTTPRequestOperation(request: request)
        operation.urlCache = cache
        let (done, _) = recordOutcome(of: operation)
        operation.start()
        let server = try XCTUnwrap(self.server)
        XCTAssertTrue(eventually { server.requests.filter { $0.path == "/cache/held" }.count == 2 }, "the revalidation reached the server")
        // Held by the server for three seconds: the transfer is the run's, and reads as it was made.
        let sent = operation.state.withLock { $0.run.transfer.map { ($0.originalRequest, $0.conditionalFields) } }
        XCTAssertEqual(sent?.0.allHTTPHeaderFields, ["X-App": "kept"], "the operation's request, unchanged")
        XCTAssertEqual(sent?.1.map { "\($0.name): \($0.value)" }, ["If-None-Match: \"held-v1\""])
        XCTAssertEqual(requests(to: "/cache/held").last?.header("If-None-Match"), "\"held-v1\"")
        XCTAssertEqual(requests(to: "/cache/held").last?.header("X-App"), "kept")
        wait(for: [done], timeout: 10)
        XCTAssertEqual(operation.metrics?.cacheStatus, .revalidated)
    }

    /// An interceptor adapts the request as it would be sent: a revalidation's fields are on it, and
    /// what it returns is what goes out, each field once.
    func testAnInterceptorAdaptsTheRevalidationWithItsFields() throws {
        let path = "/cache/adapted?cc=no-cache&etag=strong"
        fetch(path)
        let interceptor = ConditionRecordingInterceptor()
        let second = fetch(path) { $0.interceptor = interceptor }
        XCTAssertEqual(second.metrics?.cacheStatus, .revalidated)
        let last = try XCTUnwrap(requests(to: "/cache/adapted").last)
        XCTAssertEqual(last.header("If-None-Match"), "\"adapted-v1\"")
        XCTAssertEqual(last.header("X-Adapted"), "yes", "the adapted request went out")
        XCTAssertEqual(interceptor.seen, ["\"adapted-v1\""], "the interceptor saw the cache's field")
    }

    func testValidatorsOnTheWire() throws {
        fetch("/cache/weak?cc=no-cache&etag=weak")
        fetch("/cache/weak?cc=no-cache&etag=weak")
        XCTAssertEqual(requests(to: "/cache/weak").last?.header("If-None-Match"), "W/\"weak-v1\"", "a weak tag as stored")

        fetch("/cache/dated?cc=no-cache&lastModified=1")
        let revalidated = fetch("/cache/dated?cc=no-cache&lastModified=1")
        let last = try XCTUnwrap(requests(to: "/cache/dated").last)
        XCTAssertNil(last.header("If-None-Match"))
        XCTAssertEqual(last.header("If-Modified-Since"), "Sun, 13 Sep 2020 12:26:40 GMT", "the stored Last-Modified")
        XCTAssertEqual(revalidated.metrics?.cacheStatus, .revalidated)

        fetch("/cache/both?cc=no-cache&lastModified=1&etag=strong")
        fetch("/cache/both?cc=no-cache&lastModified=1&etag=strong")
        let both = try XCTUnwrap(requests(to: "/cache/both").last)
        XCTAssertEqual(both.header("If-None-Match"), "\"both-v1\"")
        XCTAssertEqual(both.header("If-Modified-Since"), "Sun, 13 Sep 2020 12:26:40 GMT", "sent too, as RFC 9111 §4.3.1 says")
    }

    func testAChangedResourceReplacesTheStoredOne() throws {
        let path = "/cache/changing?cc=max-age=0&etag=strong"
        fetch(path)
        // Changed behind the cache's back: an operation without a cache invalidates nothing.
        fetch(path, method: "PUT") { $0.urlCache = nil }
        let changed = fetch(path)
        XCTAssertEqual(requests(to: "/cache/changing").last?.header("If-None-Match"), "\"changing-v1\"")
        XCTAssertEqual(text(changed), "changing v2 #2")
        XCTAssertEqual(changed.metrics?.cacheStatus, .stored)
        let again = fetch(path)
        XCTAssertEqual(requests(to: "/cache/changing").last?.header("If-None-Match"), "\"changing-v2\"",
                       "the new response replaced the old one")
        XCTAssertEqual(text(again), "changing v2 #2")
        XCTAssertEqual(again.metrics?.cacheStatus, .revalidated)
    }

    func testFreshnessFromExpiresAndAge() throws {
        let now = Date()
        let future = CacheFixture.httpDate(now.addingTimeInterval(3_600))
        let past = CacheFixture.httpDate(now.addingTimeInterval(-3_600))
        let date = CacheFixture.httpDate(now)
        let rows: [(String, Int)] = [
            ("/cache/expires?expires=\(future)&date=\(date)", 1),        // fresh for an hour
            ("/cache/expired?expires=\(past)&date=\(date)", 2),          // stale: loaded again
            ("/cache/zero?expires=0", 2),                                // invalid: in the past
            ("/cache/aged?cc=max-age=60&age=100", 2),                    // older than its lifetime on arrival
            ("/cache/young?cc=max-age=600&age=100", 1),
            ("/cache/heuristic?lastModified=1", 1),                      // 10 % of years since Last-Modified
        ]
        for (path, expected) in rows {
            fetch(path)
            fetch(path)
            let name = String(path.split(separator: "?")[0])
            XCTAssertEqual(requests(to: name).count, expected, path)
        }
    }

    func testRequestDirectives() throws {
        let path = "/cache/directives?cc=max-age=600&etag=strong"
        fetch(path)
        XCTAssertEqual(fetch(path, headers: ["Cache-Control": "no-cache"]).metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(fetch(path, headers: ["Pragma": "no-cache"]).metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(fetch(path, headers: ["Cache-Control": "max-age=0"]).metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(fetch(path, headers: ["Cache-Control": "min-fresh=3600"]).metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(fetch(path, headers: ["Cache-Control": "max-age=300"]).metrics?.cacheStatus, .hit)
        XCTAssertEqual(requests(to: "/cache/directives").count, 5)
        XCTAssertTrue(requests(to: "/cache/directives").dropFirst().allSatisfy { $0.header("If-None-Match") == "\"directives-v1\"" })

        // RFC 9111 §5.2.1.7: nothing stored satisfies it, so it is answered 504 (the serializer's error).
        let missing = fetch("/cache/absent?cc=max-age=600", headers: ["Cache-Control": "only-if-cached"])
        XCTAssertEqual(missing.response?.statusCode, 504)
        XCTAssertEqual((missing.error as NSError?)?.domain, ResponseSerializationErrorDomain)
        XCTAssertEqual(missing.metrics?.cacheStatus, .miss)
        XCTAssertEqual(requests(to: "/cache/absent").count, 0, "only-if-cached never loads")
        fetch("/cache/nostore?cc=max-age=600", headers: ["Cache-Control": "no-store"])
        fetch("/cache/nostore?cc=max-age=600")
        XCTAssertEqual(requests(to: "/cache/nostore").count, 2, "a request's no-store: nothing was stored")
    }

    func testEachPolicy() throws {
        let fresh = "/cache/policy?cc=max-age=600&etag=strong"
        fetch(fresh)
        let reloaded = fetch(fresh, policy: .reloadIgnoringLocalCacheData)
        XCTAssertNil(requests(to: "/cache/policy").last?.header("If-None-Match"), "reload ignores what is stored")
        XCTAssertEqual(text(reloaded), "policy v1 #2")
        XCTAssertEqual(reloaded.metrics?.cacheStatus, .stored, "and still stores")
        XCTAssertEqual(text(fetch(fresh)), "policy v1 #2", "the reloaded response answers now")

        let revalidated = fetch(fresh, policy: .reloadRevalidatingCacheData)
        XCTAssertEqual(requests(to: "/cache/policy").last?.header("If-None-Match"), "\"policy-v1\"", "even when fresh")
        XCTAssertEqual(revalidated.metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(requests(to: "/cache/policy").count, 3)

        let stale = "/cache/old?cc=max-age=0"
        fetch(stale)
        let anyAge = fetch(stale, policy: .returnCacheDataElseLoad)
        XCTAssertEqual(anyAge.metrics?.cacheStatus, .hit)
        XCTAssertEqual(text(anyAge), "old v1 #1", "whatever its age")
        XCTAssertEqual(fetch(stale, policy: .returnCacheDataDontLoad).metrics?.cacheStatus, .hit)
        XCTAssertEqual(requests(to: "/cache/old").count, 1)
        let loaded = fetch("/cache/new?cc=max-age=0", policy: .returnCacheDataElseLoad)
        XCTAssertEqual(text(loaded), "new v1 #1", "a miss loads")

        let refused = fetch("/cache/never", policy: .returnCacheDataDontLoad)
        XCTAssertEqual((refused.error as? URLError)?.code, .resourceUnavailable)
        XCTAssertEqual(refused.metrics?.cacheStatus, .miss)
        XCTAssertEqual(requests(to: "/cache/never").count, 0)
    }

    func testVaryIsASecondaryKey() throws {
        let path = "/cache/vary?cc=max-age=600&vary=Accept"
        let plain = fetch(path, headers: ["Accept": "text/plain"])
        XCTAssertEqual(text(plain), "vary v1 #1 Accept=text/plain")
        let same = fetch(path, headers: ["Accept": "TEXT/PLAIN"])
        XCTAssertEqual(same.metrics?.cacheStatus, .hit, "Accept compares without case (§4.1)")
        let other = fetch(path, headers: ["Accept": "application/json"])
        XCTAssertEqual(text(other), "vary v1 #2 Accept=application/json", "another Accept goes to the network")
        XCTAssertEqual(requests(to: "/cache/vary").count, 2)

        fetch("/cache/star?cc=max-age=600&vary=*")
        fetch("/cache/star?cc=max-age=600&vary=*")
        XCTAssertEqual(requests(to: "/cache/star").count, 2, "Vary: * never matches")

        let encoded = "/cache/encoding?cc=max-age=600&vary=Accept-Encoding"
        fetch(encoded)
        XCTAssertEqual(fetch(encoded).metrics?.cacheStatus, .hit)
        XCTAssertEqual(fetch(encoded, headers: ["Accept-Encoding": Transfer.offeredEncodings]).metrics?.cacheStatus, .hit,
                       "the Accept-Encoding the library sends is the key, as sent")
        XCTAssertEqual(fetch(encoded, headers: ["Accept-Encoding": "identity"]).metrics?.cacheStatus, .stored)
    }
}

/// Records the `If-None-Match` of each request it adapts, and marks it.
private final class ConditionRecordingInterceptor: RequestInterceptor, @unchecked Sendable {   // `conditions` is behind `lock`
    private let lock = NSLock()
    private var conditions: [String?] = []

    var seen: [String?] { lock.withLock { conditions } }

    func adapt(_ request: URLRequest, for operation: URLConnectionOperation) async throws -> URLRequest {
        lock.withLock { conditions.append(request.value(forHTTPHeaderField: "If-None-Match")) }
        var adapted = request
        adapted.setValue("yes", forHTTPHeaderField: "X-Adapted")
        return adapted
    }

    func retry(_ operation: URLConnectionOperation, dueTo error: Error?, response: HTTPURLResponse?) async -> RetryDecision {
        .doNotRetry
    }
}
