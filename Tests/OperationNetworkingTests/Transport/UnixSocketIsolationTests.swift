import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Two sockets whose requests name the same host, and a TCP server of that host: none of them ever
/// answers another's request, through a shared connection or through the HTTP cache.
final class UnixSocketIsolationTests: LibraryTestCase {
    private var cache: URLCache!
    private var cacheDirectory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-cache-\(UUID().uuidString)")
        cache = URLCache(memoryCapacity: 4 << 20, diskCapacity: Sanitizer.address ? 0 : 20 << 20, diskPath: cacheDirectory.path)
    }

    override func tearDown() {
        cache = nil
        try? FileManager.default.removeItem(at: cacheDirectory)
        super.tearDown()
    }

    /// One GET of `url` through the test's cache, over `socket` (TCP when `nil`); the body.
    private func get(_ url: URL, socket: String?, method: String = "GET") -> String? {
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 10
        let operation = HTTPRequestOperation(request: request)
        operation.urlCache = cache
        operation.unixSocketPath = socket
        XCTAssertNil(run(operation).error, "\(url) over \(socket ?? "TCP")")
        if socket != nil { XCTAssertEqual(operation.metrics?.cacheStatus, .notConsulted, "a socket's request leaves the cache out") }
        return operation.responseString
    }

    func testSocketsAndTCPNamingTheSameHostShareNoConnectionAndNoCacheEntry() throws {
        let folder = try makeSocketFolder()
        let first = try makeSocketServer("a.sock", in: folder)
        let second = try makeSocketServer("b.sock", in: folder)
        let tcp = try TestServer()
        defer { tcp.shutdown() }
        // The TCP server's URL, so that one URL names it, and each socket's server over its socket.
        let path = "/cache/shared?cc=max-age%3D600"
        let url = tcp.url(path)
        _ = get(url, socket: nil)
        _ = get(url, socket: nil)
        XCTAssertEqual(tcp.requests(path: "/cache/shared").count, 1, "over TCP the second GET is a cache hit")
        for (round, server) in [first, second, first, second].enumerated() {
            _ = get(url, socket: server.unixSocketPath)
            XCTAssertEqual(server.requests(path: "/cache/shared").count, round / 2 + 1,
                           "round \(round): the socket's own server answered, not the cache nor another socket")
        }
        _ = get(url, socket: nil)
        XCTAssertEqual(tcp.requests(path: "/cache/shared").count, 1, "the TCP entry is still the TCP server's")
        // A socket's server may not drop the TCP entry either: an unsafe request over it invalidates nothing.
        _ = get(url, socket: first.unixSocketPath, method: "POST")
        _ = get(url, socket: nil)
        XCTAssertEqual(tcp.requests(path: "/cache/shared").count, 1, "a POST over a socket dropped the TCP entry")
        XCTAssertEqual(first.acceptedConnections, 1, "one connection per socket, kept")
        XCTAssertEqual(second.acceptedConnections, 1)
    }
}
