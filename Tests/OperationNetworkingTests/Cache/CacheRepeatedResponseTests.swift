import CSQLite
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// A response stored again that only repeats the stored one, where nothing depends on when it came
/// (no freshness lifetime and no time to serve it stale, or a bare `no-cache`), is not written again:
/// the usual API response without cache fields, fetched again and again, and a `no-cache` response
/// validated each time, cost no write (issue 57). Anything that differs, or a response whose date
/// matters, is written.
final class CacheRepeatedResponseTests: CacheDirectoryTestCase {
    private var url: URL { URL(string: "http://127.0.0.1:9/api/items") ?? URL(fileURLWithPath: "/") }

    private func response(_ fields: [String: String], body: String = "[1,2,3]", received: Date) -> StoredResponse {
        StoredResponse(url: url, statusCode: 200, headers: fields, body: Data(body.utf8), varyingRequestHeaders: [:],
                       requestTime: received, responseTime: received)
    }

    /// The row's `stored_at` for the URL, read from the file.
    private func storedAt() throws -> Double? {
        let connection = try SQLiteConnection(path: databaseFile.path, busyTimeoutMilliseconds: 1_000)
        guard case .real(let value)? = try connection.run("SELECT stored_at FROM entries WHERE key = ?",
                                                            [.text(url.absoluteString)]).first?.first else { return nil }
        return value
    }

    /// Stores `first`, writes it, stores `second` a moment later and writes again: whether the row changed.
    private func rowRewritten(_ first: StoredResponse, then second: StoredResponse) throws -> Bool {
        // With a memory tier, as the shared cache has: the comparison is with the entry memory keeps.
        let storage = CacheStorage(SQLiteURLCache(memoryCapacity: 1 << 20, diskCapacity: 20 << 20, directory: directory))
        storage.store(first, forURL: url)
        flush(storage)
        let before = try XCTUnwrap(try storedAt())
        // The next store's time must differ from the first's for a rewrite to show.
        let later = Date().addingTimeInterval(0.002)
        while Date() < later { _ = storage.storedResponse(for: URLRequest(url: url)) }
        storage.store(second, forURL: url)
        flush(storage)
        let after = try XCTUnwrap(try storedAt())
        XCTAssertEqual(storage.storedResponse(for: URLRequest(url: url))?.body, second.body)
        return after != before
    }

    func testAResponseWithoutTimeRepeatedWithAnotherDateIsNotWrittenAgain() throws {
        let start = Date()
        let first = response(["Date": CacheFixture.httpDate(start), "Content-Type": "application/json"], received: start)
        let again = response(["Date": CacheFixture.httpDate(start.addingTimeInterval(5)), "Content-Type": "application/json"],
                             received: start.addingTimeInterval(5))
        XCTAssertFalse(try rowRewritten(first, then: again))
    }

    func testANoCacheResponseValidatedAgainWithAnotherDateIsNotWrittenAgain() throws {
        let start = Date()
        let fields = ["Cache-Control": "no-cache", "ETag": "\"v1\""]
        let first = response(fields.merging(["Date": CacheFixture.httpDate(start)]) { $1 }, received: start)
        let again = response(fields.merging(["Date": CacheFixture.httpDate(start.addingTimeInterval(5))]) { $1 },
                             received: start.addingTimeInterval(5))
        XCTAssertFalse(try rowRewritten(first, then: again))
    }

    func testADifferentBodyOrFieldIsWritten() throws {
        let now = Date()
        XCTAssertTrue(try rowRewritten(response(["Content-Type": "application/json"], received: now),
                                       then: response(["Content-Type": "application/json"], body: "[1,2,4]", received: now)))
        XCTAssertTrue(try rowRewritten(response(["Content-Type": "application/json"], received: now),
                                       then: response(["Content-Type": "text/plain"], received: now)))
    }

    func testAResponseWhoseDateMattersIsWrittenEvenWhenItRepeats() throws {
        let now = Date()
        for fields in [["Cache-Control": "max-age=60"], ["Last-Modified": CacheFixture.httpDate(now)],
                       ["Expires": CacheFixture.httpDate(now.addingTimeInterval(60))],
                       ["Cache-Control": "stale-while-revalidate=30"],
                       ["Cache-Control": "no-cache=\"set-cookie\", max-age=60"]] {
            XCTAssertTrue(try rowRewritten(response(fields, received: now), then: response(fields, received: now)), "\(fields)")
        }
    }
}
