import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The background revalidation of a response served stale (`stale-while-revalidate`) connects as the
/// operation's own revalidation would: under its security snapshot (anchors and pins) and client
/// certificate, storing under its trust identity (`CacheTrust`). The operations pin the genuine root
/// and also trust the attacker's root, so only the pin tells the attacker apart.
final class StaleWhileRevalidateTrustTests: LibraryTestCase {
    private var directory: URL!
    private var servers: [TestServer] = []
    private var relay: SwitchingRelay?
    private var genuineRoot: TestCertificateAuthority!
    private var attackerRoot: TestCertificateAuthority!

    /// Fresh for 60 s, 100 s old on arrival, servable stale for 600 s.
    private static let path = "/cache/x?cc=max-age%3D60,stale-while-revalidate%3D600&etag=strong&ageFirst=100"

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-swr-trust-\(UUID().uuidString)")
        genuineRoot = try TestCertificateAuthority(commonName: "Genuine Root")
        attackerRoot = try TestCertificateAuthority(commonName: "Mis-issuing Root")
    }

    override func tearDown() {
        relay?.stop()
        servers.forEach { $0.shutdown() }
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    private func server(_ authority: TestCertificateAuthority) throws -> TestServer {
        let server = try TestServer(tls: try authority.issue())
        servers.append(server)
        return server
    }

    /// Pinning the genuine root, with the attacker's root trusted too.
    private func pinned() -> SecurityPolicy {
        let policy = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [genuineRoot.certificate])
        policy.additionalTrustAnchors = [attackerRoot.certificate]
        return policy
    }

    @discardableResult
    private func fetch(_ url: URL, cache: URLCache, method: String = "GET", headers: [String: String] = [:]) -> HTTPRequestOperation {
        var request = URLRequest(url: url)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let operation = HTTPRequestOperation(request: request)
        operation.securityPolicy = pinned()
        operation.urlCache = cache
        XCTAssertTrue(run(operation).isSuccess, "\(method) \(url)")
        return operation
    }

    private func revalidationEnded(_ cache: URLCache, _ url: URL) -> Bool {
        eventually(timeout: 10) { !BackgroundRevalidator.isRunning(cache: cache, key: url) }
    }

    func testTheBackgroundRevalidationConnectsAndStoresUnderTheOperationsTrust() throws {
        let genuine = try server(genuineRoot)
        let url = genuine.url(StaleWhileRevalidateTrustTests.path)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: directory)
        fetch(url, cache: cache)
        let change = HTTPRequestOperation(request: { var r = URLRequest(url: url); r.httpMethod = "PUT"; return r }())
        change.securityPolicy = pinned()
        change.urlCache = nil
        XCTAssertTrue(run(change).isSuccess, "the resource changes behind the cache")
        let stale = fetch(url, cache: cache)
        XCTAssertEqual(stale.responseString, "x v1 #1")
        XCTAssertTrue(stale.cacheAnsweredStale)
        XCTAssertTrue(revalidationEnded(cache, url))
        // Trusted only through the operation's anchors and pin, stored under its identity: it answers.
        let after = fetch(url, cache: cache)
        XCTAssertEqual(after.metrics?.cacheStatus, .hit)
        XCTAssertFalse(after.cacheAnsweredStale)
        XCTAssertEqual(after.responseString, "x v2 #2")
        XCTAssertEqual(genuine.requests.filter { $0.method == "GET" }.count, 2)
    }

    func testTheBackgroundRevalidationEvaluatesThePin() throws {
        let genuine = try server(genuineRoot)
        let attacker = try server(attackerRoot)
        relay = try XCTUnwrap(SwitchingRelay(first: genuine.port, later: attacker.port))
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(try XCTUnwrap(relay?.port))\(StaleWhileRevalidateTrustTests.path)"))
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: directory)
        // The genuine server behind the relay's first connection, closed after it: every later one
        // reaches the attacker, whose certificate the operation's roots accept and its pin refuses.
        fetch(url, cache: cache, headers: ["Connection": "close"])
        let stale = fetch(url, cache: cache)
        XCTAssertEqual(stale.metrics?.cacheStatus, .hit)
        XCTAssertTrue(stale.cacheAnsweredStale)
        XCTAssertEqual(stale.responseString, "x v1 #1")
        XCTAssertTrue(revalidationEnded(cache, url))
        XCTAssertEqual(relay?.connections, 2, "the revalidation connected")
        XCTAssertEqual(attacker.requests.count, 0, "its pin refused the attacker before any request was sent")
        let again = fetch(url, cache: cache)
        XCTAssertEqual(again.responseString, "x v1 #1", "nothing the attacker said was stored")
        XCTAssertTrue(revalidationEnded(cache, url))
    }
}
