import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// A response an operation stored in one process answers an operation in the next without the
/// network: the child half fetches through the library's SQLite store and exits, then this process
/// opens the same directory and asks again.
final class CacheRestartWireTests: TemporaryDirectoryTestCase {
    /// The cache directory and the URL of this process's server; set only in the child's environment.
    private static let directoryVariable = "ONET_CACHE_RESTART_WIRE_DIRECTORY"
    private static let urlVariable = "ONET_CACHE_RESTART_WIRE_URL"

    func testAResponseStoredByAnOperationInAnotherProcessAnswersWithoutTheNetwork() throws {
        let url = server.url("/cache/restart?cc=max-age=600")
        try runChildHalf(url: url)
        XCTAssertEqual(server.requests(path: "/cache/restart").count, 1, "the child fetched it")

        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.urlCache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: directory)
        XCTAssertNil(run(operation).error)
        XCTAssertEqual(operation.metrics?.cacheStatus, .hit)
        XCTAssertEqual(operation.responseData.map { String(decoding: $0, as: UTF8.self) }, "restart v1 #1")
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertEqual(server.requests(path: "/cache/restart").count, 1, "the hit sent nothing")
    }

    /// Runs the child half in a process of its own, which fetches `url` into the cache in this test's
    /// directory and exits.
    private func runChildHalf(url: URL) throws {
        try runChildHalf("CacheRestartWireTests/testChildHalfFetchesIntoTheCache",
                         environment: [Self.directoryVariable: directory.path, Self.urlVariable: url.absoluteString])
    }

    /// The child half of the test above; skipped in any other run.
    func testChildHalfFetchesIntoTheCache() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment[Self.directoryVariable], let url = environment[Self.urlVariable].flatMap(URL.init(string:)) else {
            throw XCTSkip("the child process of testAResponseStoredByAnOperationInAnotherProcessAnswersWithoutTheNetwork")
        }
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: URL(fileURLWithPath: path))
        operation.urlCache = cache
        XCTAssertNil(run(operation).error)
        cache.flush()   // `.stored` once its batch is written
        XCTAssertEqual(operation.metrics?.cacheStatus, .stored)
    }
}
