import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The cache's key is the request's identity, attacked as the last security round did, through the
/// library's default store: a `Host` field of the app's own, a password in the URL, a redirect an app's
/// block refuses, `maximumResponseSize`, and invalidation across origins.
final class CacheKeyIdentityTests: ServerTestCase {
    private var directory: URL!
    private var cache: URLCache!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-key-\(UUID().uuidString)")
        cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: directory)
    }

    override func tearDown() {
        cache = nil
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    @discardableResult
    private func fetch(_ url: URL, headers: [String: String] = [:], method: String = "GET",
                       configure: (HTTPRequestOperation) -> Void = { _ in }) -> (HTTPRequestOperation, Outcome) {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let operation = HTTPRequestOperation(request: request)
        operation.urlCache = cache
        configure(operation)
        let outcome = run(operation)
        // Its store written now: the library's cache reports `.stored` once it is.
        (cache as? SQLiteURLCache)?.flush()
        return (operation, outcome)
    }

    private func body(_ operation: HTTPRequestOperation) -> String? {
        operation.responseData.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Two virtual hosts behind one address, told apart by the `Host` field the app sets, never share
    /// an entry: such a request is not cached. A `Host` field naming the URL's own authority changes nothing.
    func testAHostFieldNamingAnotherHostIsNeverAnsweredFromTheCache() throws {
        let url = server.url("/cache/vhost?cc=max-age%3D600")
        let alice = fetch(url, headers: ["Host": "alice.example"]).0
        let bob = fetch(url, headers: ["Host": "bob.example"]).0
        XCTAssertEqual(alice.metrics?.cacheStatus, .notConsulted)
        XCTAssertEqual(bob.metrics?.cacheStatus, .notConsulted)
        XCTAssertEqual(body(bob), "vhost v1 #2", "bob's request reached the server")
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/vhost" }.map { $0.header("Host") },
                       ["alice.example", "bob.example"])

        let own = "127.0.0.1:\(server.port)"
        XCTAssertEqual(fetch(url, headers: ["Host": own]).0.metrics?.cacheStatus, .stored)
        XCTAssertEqual(fetch(url, headers: ["Host": own.uppercased()]).0.metrics?.cacheStatus, .hit)
    }

    /// A password (and the user name) in the URL is a credential: it is never written into the cache
    /// file, and the response it fetched answers no request without the origin.
    func testAPasswordInTheURLIsNeverWrittenToDiskAndAnswersNoOneElse() throws {
        let path = "/cache/private?cc=public%2C%20max-age%3D600"
        var components = try XCTUnwrap(URLComponents(url: server.url(path), resolvingAgainstBaseURL: false))
        components.user = "alice-name"
        components.password = "hunter2-secret"
        let withPassword = try XCTUnwrap(components.url)
        XCTAssertEqual(fetch(withPassword).0.metrics?.cacheStatus, .stored)
        (cache as? SQLiteURLCache)?.flush()

        var bytes = Data()
        for suffix in ["", "-wal", "-shm", "-journal"] {
            bytes.append(FileManager.default.contents(atPath: directory.appendingPathComponent("cache.sqlite3" + suffix).path)
                         ?? Data())
        }
        XCTAssertGreaterThan(bytes.count, 0)
        XCTAssertNotNil(bytes.range(of: Data("/cache/private".utf8)), "the entry is in the files read")
        XCTAssertNil(bytes.range(of: Data("hunter2-secret".utf8)), "the password is on disk")
        XCTAssertNil(bytes.range(of: Data("alice-name".utf8)), "the user name is on disk")

        let anonymous = fetch(server.url(path)).0
        XCTAssertNotEqual(anonymous.metrics?.cacheStatus, .hit, "answered with alice's response without the origin")
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/private" }.count, 2)
    }

    /// After one operation followed a permanent redirect to another origin, a later one whose redirect
    /// block refuses other origins meets the redirect again and refuses it: nothing stored skips the block.
    func testAStoredRedirectTargetNeverSkipsTheRedirectBlock() throws {
        let other = try TestServer()
        defer { other.shutdown() }
        let target = other.url("/cache/moved?cc=max-age%3D31536000").absoluteString
        var components = try XCTUnwrap(URLComponents(url: server.url("/redirect-to"), resolvingAgainstBaseURL: false))
        components.queryItems = [URLQueryItem(name: "url", value: target), URLQueryItem(name: "status", value: "301")]
        let original = try XCTUnwrap(components.url)

        let (followed, _) = fetch(original)
        XCTAssertEqual(body(followed), "moved v1 #1")
        XCTAssertEqual(followed.metrics?.cacheStatus, .stored)

        let asked = Recorder<URL?>()
        let port = server.port
        let (guarded, _) = fetch(original) { operation in
            operation.setRedirectResponseBlock { _, request, _ in
                asked.append(request.url)
                return request.url?.port == port ? request : nil
            }
        }
        XCTAssertEqual(asked.all.count, 1, "the redirect block was asked")
        XCTAssertEqual(guarded.response?.statusCode, 301, "the refused redirect is delivered as it came")
        XCTAssertNotEqual(body(guarded), "moved v1 #1")
        XCTAssertEqual(server.requests.filter { $0.path == "/redirect-to" }.count, 2)
        XCTAssertEqual(other.requests.count, 1, "the other origin was not asked again")
    }

    /// `maximumResponseSize` applies to a stored body as to one from the network: a larger one answers
    /// nothing, and the network's answer is refused as it would be without a cache.
    func testMaximumResponseSizeAppliesToAHit() throws {
        let url = server.url("/cache/sized?cc=max-age%3D600")
        XCTAssertEqual(fetch(url).0.metrics?.cacheStatus, .stored)
        let (limited, outcome) = fetch(url) { $0.maximumResponseSize = 4 }
        XCTAssertNotEqual(limited.metrics?.cacheStatus, .hit)
        XCTAssertEqual(outcome.urlErrorCode, .dataLengthExceedsMaximum)
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/sized" }.count, 2)
        let (roomy, _) = fetch(url) { $0.maximumResponseSize = 1_000 }
        XCTAssertEqual(roomy.metrics?.cacheStatus, .hit, "a body within the limit is still answered")
    }

    /// RFC 9111 §4.4: a `Content-Location` or `Location` invalidates only within the origin of the
    /// response naming it; after a redirect that is the final URL's origin, not the request's.
    func testInvalidationByLocationStaysWithinTheRespondingOrigin() throws {
        let other = try TestServer()
        defer { other.shutdown() }
        let victim = server.url("/cache/victim?cc=max-age%3D600")
        XCTAssertEqual(fetch(victim).0.metrics?.cacheStatus, .stored)
        let neighbour = other.url("/cache/neighbour?cc=max-age%3D600")
        XCTAssertEqual(fetch(neighbour).0.metrics?.cacheStatus, .stored)

        // POST to this origin, 307 to the other, whose answer names a URL of each origin.
        var answering = try XCTUnwrap(URLComponents(url: other.url("/cache/target"), resolvingAgainstBaseURL: false))
        answering.queryItems = [URLQueryItem(name: "contentLocation", value: victim.absoluteString),
                                URLQueryItem(name: "location", value: neighbour.absoluteString)]
        var components = try XCTUnwrap(URLComponents(url: server.url("/redirect-to"), resolvingAgainstBaseURL: false))
        components.queryItems = [URLQueryItem(name: "url", value: try XCTUnwrap(answering.url).absoluteString),
                                 URLQueryItem(name: "status", value: "307")]
        let (post, outcome) = fetch(try XCTUnwrap(components.url), method: "POST")
        XCTAssertNil(outcome.error)
        XCTAssertEqual(post.response?.url?.port, other.port)

        XCTAssertEqual(fetch(victim).0.metrics?.cacheStatus, .hit, "another origin's Content-Location invalidated it")
        XCTAssertNotEqual(fetch(neighbour).0.metrics?.cacheStatus, .hit, "the responding origin's own Location invalidates")
    }
}
