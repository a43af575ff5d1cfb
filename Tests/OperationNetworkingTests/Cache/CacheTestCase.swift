import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A server test with a URL cache of its own in a temporary directory (never the shared one, so no
/// test sees another's responses), and helpers to fetch through it.
class CacheTestCase: ServerTestCase {
    /// The test's cache.
    private(set) var cache: URLCache!
    private var cacheDirectory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-cache-\(UUID().uuidString)")
        // In memory under AddressSanitizer: corelibs' disk cache archives each stored body through
        // `Data._bridgeToObjectiveC()` and never releases it, a corelibs leak LeakSanitizer would report.
        cache = URLCache(memoryCapacity: 4 << 20, diskCapacity: Sanitizer.address ? 0 : 20 << 20, diskPath: cacheDirectory.path)
    }

    override func tearDown() {
        cache = nil
        try? FileManager.default.removeItem(at: cacheDirectory)
        super.tearDown()
    }

    /// Runs `method` on `path` through the test's cache with `policy` and `headers`, after
    /// `configure`; returns the operation once its handlers ran.
    @discardableResult
    func fetch(_ path: String, policy: URLRequest.CachePolicy = .useProtocolCachePolicy, method: String = "GET",
               headers: [String: String] = [:], configure: (HTTPRequestOperation) -> Void = { _ in }) -> HTTPRequestOperation {
        var request = self.request(path, method: method)
        request.cachePolicy = policy
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let operation = HTTPRequestOperation(request: request)
        operation.urlCache = cache
        configure(operation)
        run(operation)
        return operation
    }

    /// The requests the server received for `path` (without its query).
    func requests(to path: String) -> [RecordedRequest] {
        server.requests.filter { $0.path == path }
    }

    /// The body as text.
    func text(_ operation: URLConnectionOperation) -> String? {
        operation.responseData.map { String(decoding: $0, as: UTF8.self) }
    }

    /// What the stored response for `path` holds, read from the storage.
    func stored(_ path: String) -> StoredResponse? {
        CacheStorage(cache).storedResponse(for: URLRequest(url: server.url(path)))
    }
}

/// A response serializer that records the response and body it was given.
final class RecordingSerializer: HTTPResponseSerializer, @unchecked Sendable {   // `seen` is behind `lock`
    private let lock = NSLock()
    private var seen: [(status: Int, body: Data?)] = []

    var calls: [(status: Int, body: Data?)] { lock.withLock { seen } }

    override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        lock.withLock { seen.append(((response as? HTTPURLResponse)?.statusCode ?? -1, data)) }
        return try super.responseObject(for: response, data: data)
    }
}
