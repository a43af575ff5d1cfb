import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// What the cache stores and drops, on the wire: invalidation, `no-store`, credentials, cancelled,
/// cut-short and streamed bodies, the size limit, the cache response block, resumed downloads and
/// redirects. "Nothing stored" is checked by a request that may not load.
final class CacheStoringTests: CacheTestCase {
    /// Whether a response for `path` is stored (asked without loading).
    private func isStored(_ path: String) -> Bool {
        fetch(path, policy: .returnCacheDataDontLoad).error == nil
    }

    func testUnsafeMethodsInvalidate() throws {
        let path = "/cache/item?cc=max-age=600"
        fetch(path)
        XCTAssertEqual(fetch(path).metrics?.cacheStatus, .hit)
        let post = fetch(path, method: "POST")
        XCTAssertEqual(post.metrics?.cacheStatus, .notConsulted)
        let after = fetch(path)
        XCTAssertEqual(after.metrics?.cacheStatus, .stored, "the POST's success invalidated the stored response")
        XCTAssertEqual(text(after), "item v2 #2")

        let target = "/cache/target?cc=max-age=600"
        fetch(target)
        fetch("/cache/creator?location=\(target.replacingOccurrences(of: "?", with: "%3F"))&status=201", method: "POST")
        XCTAssertFalse(isStored(target), "the same-origin Location was invalidated")

        fetch(target)
        fetch("/cache/creator?location=http://elsewhere.invalid/cache/target&status=201", method: "POST")
        XCTAssertTrue(isStored(target), "another origin's Location is left alone")

        let deleted = "/cache/deleted?cc=max-age=600"
        fetch(deleted)
        fetch(deleted, method: "DELETE")
        XCTAssertFalse(isStored(deleted), "a DELETE answered 204 invalidates")
        let kept = "/cache/kept?cc=max-age=600&failUnsafe=1"
        fetch(kept)
        XCTAssertEqual(fetch(kept, method: "DELETE").response?.statusCode, 500)
        XCTAssertTrue(isStored(kept), "an error status invalidates nothing")
    }

    func testNoStoreAndCredentials() throws {
        fetch("/cache/secret?cc=max-age=600,no-store")
        XCTAssertFalse(isStored("/cache/secret?cc=max-age=600,no-store"))

        let authorized = "/cache/mine?cc=max-age=600&etag=strong"
        fetch(authorized, headers: ["Authorization": "Bearer one"])
        XCTAssertFalse(isStored(authorized), "a request with Authorization: stored only when the response allows it (§3.5)")

        let shared = "/cache/shared?cc=public,max-age=600&etag=strong"
        fetch(shared, headers: ["Authorization": "Bearer one"])
        let record = try XCTUnwrap(stored(shared))
        XCTAssertFalse(record.varyingRequestHeaders.values.contains { $0.contains("one") }, "no credential in the cache")
        let other = fetch(shared, headers: ["Authorization": "Bearer two"])
        XCTAssertEqual(requests(to: "/cache/shared").last?.header("If-None-Match"), "\"shared-v1\"",
                       "another request's credentials go to the origin before the stored response answers it")
        XCTAssertEqual(requests(to: "/cache/shared").last?.header("Authorization"), "Bearer two")
        XCTAssertEqual(other.metrics?.cacheStatus, .revalidated)
        XCTAssertFalse(isStored(shared), "never answered without the origin")

        let challenged = HTTPRequestOperation(request: request("/auth/basic/ada/secret"))
        challenged.urlCache = cache
        challenged.credential = URLCredential(user: "ada", password: "secret", persistence: .none)
        XCTAssertTrue(run(challenged).isSuccess)
        XCTAssertEqual(challenged.metrics?.cacheStatus, .miss, "answered a challenge: not stored without permission")
        XCTAssertFalse(isStored("/auth/basic/ada/secret"))
    }

    func testTheCookiesAResponseSetsAreNeverStored() throws {
        let path = "/cache/cookie?cc=max-age=600&cookie=session=secret-value"
        // The response's cookie lands in the shared storage: taken out again, so tests after this one
        // in the same process (CookieScopeTests) start without it.
        let cookieURL = server.url(path)
        addTeardownBlock {
            for cookie in HTTPCookieStorage.shared.cookies(for: cookieURL) ?? [] {
                HTTPCookieStorage.shared.deleteCookie(cookie)
            }
        }
        let first = fetch(path)
        XCTAssertEqual(first.response?.value(forHTTPHeaderField: "Set-Cookie"), "session=secret-value")
        let record = try XCTUnwrap(stored(path))
        XCTAssertNil(record.response?.value(forHTTPHeaderField: "Set-Cookie"), "a cookie's value written into the cache")
        let hit = fetch(path)
        XCTAssertEqual(hit.metrics?.cacheStatus, .hit)
        XCTAssertNil(hit.response?.value(forHTTPHeaderField: "Set-Cookie"))
    }

    func testCancelledCutShortAndFailedBodiesAreNotStored() throws {
        let cut = fetch("/drop/50000")
        XCTAssertEqual((cut.error as? URLError)?.code, .networkConnectionLost)
        XCTAssertFalse(isStored("/drop/50000"))

        let slow = "/bytes/200000?chunkSize=10000&chunkDelayMs=50"
        var request = self.request(slow)
        request.cachePolicy = .useProtocolCachePolicy
        let cancelled = HTTPRequestOperation(request: request)
        cancelled.urlCache = cache
        let (done, _) = recordOutcome(of: cancelled)
        startAndAwaitBytes(cancelled, atLeast: 20_000)
        cancelled.cancel()
        wait(for: [done], timeout: 10)
        XCTAssertTrue(cancelled.isCancelled)
        XCTAssertFalse(isStored(slow), "a cancelled operation stores nothing")

        let limited = fetch("/bytes/4000") { $0.maximumResponseSize = 1000 }
        XCTAssertEqual((limited.error as? URLError)?.code, .dataLengthExceedsMaximum)
        XCTAssertFalse(isStored("/bytes/4000"))

        XCTAssertEqual(fetch("/bytes/10", headers: ["Range": "bytes=0-4"]).response?.statusCode, 206)
        XCTAssertFalse(isStored("/bytes/10"), "a partial response is never stored")
    }

    func testAStreamedBodyIsNeitherStoredNorServed() throws {
        let path = "/cache/streamed?cc=max-age=600"
        let streamed = fetch(path) { $0.outputStream = OutputStream(toMemory: ()) }
        XCTAssertEqual(streamed.metrics?.cacheStatus, .notConsulted)
        XCTAssertFalse(isStored(path))
        fetch(path)
        let again = fetch(path) { $0.outputStream = OutputStream(toMemory: ()) }
        XCTAssertEqual(again.metrics?.cacheStatus, .notConsulted, "its body goes to the stream, from the network")
        XCTAssertEqual(requests(to: "/cache/streamed").count, 3)
    }

    func testResponsesOverAboutFivePercentOfTheCapacityAreNotStored() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-small-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let small = URLCache(memoryCapacity: 0, diskCapacity: 100_000, diskPath: directory.path)
        for (size, stored) in [(5_000, CacheStatus.stored), (5_001, .miss)] {
            let operation = fetch("/bytes/\(size)") { $0.urlCache = small }
            XCTAssertEqual(operation.metrics?.cacheStatus, stored, "\(size) bytes")
        }
    }

    func testTheCacheResponseBlockDecidesLast() throws {
        let asked = Recorder<String>()
        let path = "/cache/block?cc=max-age=0&etag=strong"
        fetch(path) { operation in
            operation.setCacheResponseBlock { _, proposed in
                asked.append("store \(String(decoding: proposed.data, as: UTF8.self))")
                return CachedURLResponse(response: proposed.response, data: Data("changed by the block".utf8),
                                         userInfo: nil, storagePolicy: .allowed)
            }
        }
        let revalidated = fetch(path) { operation in
            operation.setCacheResponseBlock { _, proposed in
                asked.append("304 \(String(decoding: proposed.data, as: UTF8.self))")
                return proposed
            }
        }
        XCTAssertEqual(text(revalidated), "changed by the block", "what the block returned was stored")
        XCTAssertEqual(revalidated.metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(asked.all, ["store block v1 #1", "304 changed by the block"], "asked for the freshened response too")

        let fresh = "/cache/blockfresh?cc=max-age=600"
        fetch(fresh)
        let hit = fetch(fresh) { $0.setCacheResponseBlock { _, proposed in asked.append("hit"); return proposed } }
        XCTAssertEqual(hit.metrics?.cacheStatus, .hit)
        XCTAssertFalse(asked.all.contains("hit"), "not asked for a fresh hit")

        let refused = fetch("/cache/refused?cc=max-age=600") { $0.setCacheResponseBlock { _, _ in nil } }
        XCTAssertEqual(refused.metrics?.cacheStatus, .miss)
        XCTAssertFalse(isStored("/cache/refused?cc=max-age=600"))
    }

    func testARetriedRequestStoresTheAttemptThatSucceeded() throws {
        let retried = fetch("/flaky/1/cached") { $0.retryPolicy = RetryPolicy(maxAttempts: 2, baseDelay: 0) }
        XCTAssertEqual(retried.attempts, 2)
        XCTAssertEqual(retried.metrics?.cacheStatus, .stored)
        XCTAssertEqual(text(fetch("/flaky/1/cached", policy: .returnCacheDataDontLoad)), "success 2")
    }

    func testAResumedDownloadIsNeverServedFromOrStitchedIntoTheCache() throws {
        // The server answers the continuation's Range with the whole body (200), as some do.
        let path = "/bytes/200000?chunkSize=10000&chunkDelayMs=20&ignoreRange=1"
        let operation = HTTPRequestOperation(request: request(path))
        operation.urlCache = cache
        let (done, box) = startAndPause(operation)
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertEqual(operation.responseData, deterministicBytes(200_000))
        XCTAssertEqual(operation.metrics?.cacheStatus, .notConsulted, "the continuation leaves the cache alone")
        XCTAssertFalse(isStored(path))
    }

    /// A redirected response is stored under the URL it came from alone, permanent redirect or not: a
    /// later request for the original URL meets the redirect again (and the operation's redirect block),
    /// while a request for the target itself is answered from the cache.
    func testRedirects() throws {
        let final = "/cache/moved?cc=max-age=600"
        let permanent = "/redirect-to?url=\(final.replacingOccurrences(of: "?", with: "%3F").replacingOccurrences(of: "=", with: "%3D"))"
        for status in [301, 302, 308] {
            let first = fetch(permanent + "&status=\(status)")
            XCTAssertEqual(first.response?.url?.path, "/cache/moved")
            XCTAssertFalse(isStored(permanent + "&status=\(status)"), "\(status)")
        }
        XCTAssertEqual(requests(to: "/redirect-to").count, 3, "each redirect was asked for")
        XCTAssertTrue(isStored(final), "the target is stored under its own URL")
        XCTAssertEqual(fetch(final).metrics?.cacheStatus, .hit)
        let again = fetch(permanent + "&status=301")
        XCTAssertEqual(requests(to: "/redirect-to").count, 4, "a permanent redirect is asked again")
        XCTAssertEqual(again.response?.url?.path, "/cache/moved")
    }

    /// RFC 9111 §4.1 allows many variants under one URL; this cache keeps one, so a request for
    /// another variant is a miss whose response replaces the stored one.
    func testOneVariantIsKeptForAURLWhoseResponseVaries() throws {
        let path = "/cache/varied?cc=max-age=600&vary=Accept-Language"
        let english = fetch(path, headers: ["Accept-Language": "en"])
        let french = fetch(path, headers: ["Accept-Language": "fr"])
        let frenchAgain = fetch(path, headers: ["Accept-Language": "fr"])
        let englishAgain = fetch(path, headers: ["Accept-Language": "en"])
        XCTAssertEqual([english, french, frenchAgain, englishAgain].map { $0.metrics?.cacheStatus },
                       [.stored, .stored, .hit, .stored])
        XCTAssertEqual(text(frenchAgain), "varied v1 #2 Accept-Language=fr")
        XCTAssertEqual(text(englishAgain), "varied v1 #3 Accept-Language=en")
        XCTAssertEqual(requests(to: "/cache/varied").count, 3)
    }

    /// A body streamed to the caller is never served from the cache, so with `.returnCacheDataDontLoad`
    /// it cannot load at all, even with a response stored for the URL.
    func testAStreamedOperationThatMayNotLoadFails() throws {
        let path = "/cache/streamed?cc=max-age=600"
        XCTAssertEqual(fetch(path).metrics?.cacheStatus, .stored)
        let streamed = fetch(path, policy: .returnCacheDataDontLoad) { $0.outputStream = OutputStream(toMemory: ()) }
        XCTAssertEqual((streamed.error as? URLError)?.code, .resourceUnavailable)
        XCTAssertEqual(requests(to: "/cache/streamed").count, 1, "nothing went to the network")
    }
}
