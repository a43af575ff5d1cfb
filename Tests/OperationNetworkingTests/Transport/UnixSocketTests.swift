import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Requests over a Unix domain socket (`unixSocketPath`, `http+unix` URLs) against the test server
/// listening on one: what reaches the socket's server, and what stays away from it.
final class UnixSocketTests: LibraryTestCase {
    private var folder: URL!
    private var server: TestServer!
    private var socketPath: String { server.unixSocketPath ?? "" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = try makeSocketFolder()
        server = try makeSocketServer(in: folder)
    }

    /// An operation for `url` over `socket` (the test's server's by default).
    private func operation(_ url: String, socket: String? = nil, method: String = "GET") throws -> HTTPRequestOperation {
        var request = URLRequest(url: try XCTUnwrap(URL(string: url)))
        request.httpMethod = method
        request.timeoutInterval = 10
        let operation = HTTPRequestOperation(request: request)
        operation.unixSocketPath = socket ?? socketPath
        return operation
    }

    private static func pattern(_ count: Int) -> Data { Data((0..<count).map { UInt8($0 % 251) }) }

    // MARK: - Over the socket

    func testAGETGoesOverTheSocketAndTheURLsHostNamesHost() throws {
        let operation = try operation("http://docker.test/echo?x=1")
        XCTAssertNil(run(operation).error)
        XCTAssertEqual(operation.response?.statusCode, 200)
        let wire = try XCTUnwrap(server.requests(path: "/echo").first)
        XCTAssertEqual(wire.uri, "/echo?x=1")
        XCTAssertEqual(wire.header("Host"), "docker.test", "the URL's host still names Host")
        XCTAssertEqual(operation.response?.url?.absoluteString, "http://docker.test/echo?x=1")
    }

    func testAStreamedBodyIsPostedWhole() throws {
        let body = Self.pattern(300_000)
        let operation = try operation("http://docker.test/upload", method: "POST")
        var request = operation.request
        request.httpBodyStream = InputStream(data: body)
        let streamed = HTTPRequestOperation(request: request)
        streamed.unixSocketPath = socketPath
        XCTAssertNil(run(streamed).error)
        let wire = try XCTUnwrap(server.requests(path: "/upload").first)
        XCTAssertEqual(wire.method, "POST")
        XCTAssertEqual(wire.body, body, "the stream's bytes, all of them, reached the socket's server")
    }

    func testAPausedDownloadResumesWithARangeOverTheSocket() throws {
        let size = 2_000_000
        let path = "/bytes/\(size)?chunkSize=65536&chunkDelayMs=20"
        let operation = try operation("http://docker.test" + path)
        let (done, box) = startAndPause(operation)
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertNil(box.value?.error)
        XCTAssertEqual(operation.responseData, Self.pattern(size), "the resumed body continues the paused one")
        let sent = server.requests(path: "/bytes/\(size)")
        XCTAssertEqual(sent.count, 2)
        let range = try XCTUnwrap(sent.last?.header("Range"), "the resumed request asks for the rest")
        XCTAssertTrue(range.hasPrefix("bytes="), range)
        XCTAssertNotEqual(range, "bytes=0-")
    }

    func testAHundredRequestsInARowShareOneConnection() throws {
        for index in 0..<100 {
            let operation = try operation("http://docker.test/echo?n=\(index)")
            XCTAssertNil(run(operation).error, "request \(index)")
        }
        XCTAssertEqual(server.requests(path: "/echo").count, 100)
        XCTAssertEqual(server.acceptedConnections, 1, "the socket's connection was kept and reused")
    }

    // MARK: - http+unix URLs

    func testAnHTTPUnixURLSendsItsPathToLocalhostOverItsSocket() throws {
        let url = "http+unix://\(unixURLHost(socketPath))/echo?q=a%20b"
        let operation = try operation(url)
        operation.unixSocketPath = nil
        XCTAssertNil(run(operation).error)
        let wire = try XCTUnwrap(server.requests(path: "/echo").first)
        XCTAssertEqual(wire.uri, "/echo?q=a%20b")
        XCTAssertEqual(wire.header("Host"), "localhost")
        XCTAssertEqual(operation.response?.url?.absoluteString, url, "the response is the caller's URL's")
    }

    func testARelativeRedirectStaysOnTheHTTPUnixURLsSocket() throws {
        let operation = try operation("http+unix://\(unixURLHost(socketPath))/redirect/2")
        operation.unixSocketPath = nil
        XCTAssertNil(run(operation).error)
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertEqual(server.requests.map(\.path), ["/redirect/2", "/redirect/1", "/redirect/0"],
                       "every hop came over the socket")
    }

    func testHostileHTTPUnixURLsFailWithoutTrapping() throws {
        let hosts = ["", "%00", "%2Ftmp%00x", "a@%2Ftmp", "%2Ftmp%2Fs.sock:80", "%ZZ", "%C3%28",
                     String(repeating: "%2Fa", count: 5_000), "%2Fno%2Fsuch%2Fsocket"]
        for host in hosts {
            for scheme in ["http+unix", "HTTPS+UNIX"] {
                guard let url = URL(string: "\(scheme)://\(host)/echo") else { continue }
                let operation = HTTPRequestOperation(request: URLRequest(url: url))
                let error = try XCTUnwrap(run(operation).error as? URLError, url.absoluteString)
                XCTAssertTrue([.badURL, .cannotConnectToHost].contains(error.code), "\(url): \(error)")
            }
        }
        XCTAssertTrue(server.requests.isEmpty)
    }

    // MARK: - Redirects, proxies, errors

    func testARedirectToAnotherHostIsNotFollowedOffTheSocket() throws {
        let operation = try operation("http://docker.test/redirect-to?url=http://elsewhere.test/echo")
        let outcome = run(operation)
        XCTAssertEqual(operation.response?.statusCode, 302, "the 3xx is the response: \(String(describing: outcome.error))")
        XCTAssertEqual(server.requests.count, 1)
        let same = try self.operation("http://docker.test/redirect-to?url=http://DOCKER.test/echo")
        XCTAssertNil(run(same).error)
        XCTAssertEqual(same.response?.statusCode, 200, "the same host stays on the socket")
        XCTAssertEqual(server.requests(path: "/echo").count, 1)
    }

    func testARedirectFromTCPOntoASocketFails() throws {
        let tcp = try TestServer()
        defer { tcp.shutdown() }
        let target = "http+unix://\(unixURLHost(socketPath))/echo"
        let operation = HTTPRequestOperation(request: URLRequest(url: tcp.url("/redirect-to?url=\(unixURLHost(target))")))
        let error = try XCTUnwrap(run(operation).error as? URLError)
        XCTAssertEqual(error.code, .unsupportedURL)
        XCTAssertTrue(server.requests.isEmpty, "a remote server cannot send a request to a local socket")
    }

    func testAProxyIsNotUsedOverASocket() throws {
        let operation = try operation("http://docker.test/echo")
        // Nothing listens there: a request sent to it would fail.
        operation.proxy = .proxy(try XCTUnwrap(URL(string: "http://127.0.0.1:9")))
        XCTAssertNil(run(operation).error)
        XCTAssertEqual(server.requests(path: "/echo").first?.uri, "/echo", "origin form, not a proxy's absolute form")
    }

    func testAMissingSocketFailsWithCannotConnectToHostNamingThePath() throws {
        let missing = folder.appendingPathComponent("missing.sock").path
        let error = try XCTUnwrap(run(try operation("http://docker.test/echo", socket: missing)).error as? URLError)
        XCTAssertEqual(error.code, .cannotConnectToHost)
        XCTAssertTrue(error.localizedDescription.contains(missing), error.localizedDescription)
        XCTAssertTrue(error.localizedDescription.contains("No such file or directory"), error.localizedDescription)
    }

    func testASocketPathWithANULByteIsRefused() throws {
        let error = try XCTUnwrap(run(try operation("http://docker.test/echo", socket: socketPath + "\0x")).error as? URLError)
        XCTAssertEqual(error.code, .badURL)
        XCTAssertTrue(server.requests.isEmpty)
    }

    // MARK: - Per-socket bookkeeping

    func testTwoSocketsNamingTheSameHTTPSHostAreTwoOrigins() throws {
        let url = URL(string: "https://docker.test/x")
        let first = Transfer.tlsOrigin(of: url, unixSocketPath: "/run/a.sock")
        let second = Transfer.tlsOrigin(of: url, unixSocketPath: "/run/b.sock")
        XCTAssertNotNil(first)
        XCTAssertNotEqual(first, second)
        XCTAssertNotEqual(first, Transfer.tlsOrigin(of: url), "a socket's origin is not the TCP one's")
        XCTAssertEqual(Transfer.tlsOrigin(of: URL(string: "https+unix://%2Frun%2Fa.sock/x")),
                       Transfer.tlsOrigin(of: URL(string: "https://localhost/x"), unixSocketPath: "/run/a.sock"))
    }
}
