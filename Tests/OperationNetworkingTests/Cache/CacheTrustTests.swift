import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The cache attacked as an on-path attacker holding a certificate the client's roots accept (a
/// mis-issuing CA): a response stored from that attacker by an operation that did not pin must never
/// answer one that pins, nor one stored under `allowInvalidCertificates` an operation with the default
/// strict policy — in this process and in another one reading the same cache file. The genuine server's
/// stored response still answers the pinned operations that fetched it.
///
/// The attacker and the genuine server sit behind one relay, so both are the same URL: the relay's first
/// connection goes to the attacker, every later one to the genuine server (a connection accepted under
/// one policy is never reused by another, so each new policy opens a new connection). Both serve
/// `/cache/x`, whose body counts the GETs each server saw; the attacker is asked once beforehand, so its
/// bodies say `#2` where the genuine server's first says `#1`.
final class CacheTrustTests: LibraryTestCase {
    private static let fixtures = Result { try Fixtures() }

    struct Fixtures {
        let genuineRoot: TestCertificateAuthority
        let genuine: TestIdentity
        let attackerRoot: TestCertificateAuthority
        let attacker: TestIdentity
        let selfSigned: TestIdentity

        init() throws {
            genuineRoot = try TestCertificateAuthority(commonName: "Genuine Root")
            genuine = try genuineRoot.issue()
            attackerRoot = try TestCertificateAuthority(commonName: "Mis-issuing Root")
            attacker = try attackerRoot.issue()
            selfSigned = try TestCertificateAuthority.selfSigned()
        }
    }

    private var fixtures: Fixtures { get throws { try CacheTrustTests.fixtures.get() } }
    private var directory: URL!
    private var servers: [TestServer] = []
    private var relay: SwitchingRelay?

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-trust-\(UUID().uuidString)")
    }

    override func tearDown() {
        relay?.stop()
        servers.forEach { $0.shutdown() }
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    /// The library's default store, in the test's directory.
    private func makeCache() -> URLCache {
        SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: directory)
    }

    /// A TLS server presenting `identity`, stopped at the end of the test.
    private func server(_ identity: TestIdentity) throws -> TestServer {
        let server = try TestServer(tls: identity)
        servers.append(server)
        return server
    }

    /// The relay's URL for `/cache/x`: the attacker behind the first connection, the genuine server
    /// behind every later one. The attacker has answered one GET of the path already.
    private func attackedURL(attacker: TestIdentity) throws -> (URL, attacker: TestServer, genuine: TestServer) {
        let attacking = try server(attacker)
        let genuine = try server(try fixtures.genuine)
        let warmUp = HTTPRequestOperation(request: URLRequest(url: attacking.url("/cache/x")))
        warmUp.securityPolicy = try trustingBoth()
        warmUp.urlCache = nil
        XCTAssertNil(run(warmUp).error)
        relay = try XCTUnwrap(SwitchingRelay(first: attacking.port, later: genuine.port))
        let port = try XCTUnwrap(relay?.port)
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(port)/cache/x?cc=max-age%3D600"))
        return (url, attacking, genuine)
    }

    /// No pinning; the client's roots vouch for both the genuine server and the attacker.
    private func trustingBoth() throws -> SecurityPolicy {
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [try fixtures.genuineRoot.certificate, try fixtures.attackerRoot.certificate]
        return policy
    }

    /// Pinning the genuine root, with the attacker's root trusted too (so only the pin refuses it).
    private func pinned(_ mode: SSLPinningMode) throws -> SecurityPolicy {
        let policy = SecurityPolicy(pinningMode: mode, withPinnedCertificates: [try fixtures.genuineRoot.certificate])
        policy.additionalTrustAnchors = [try fixtures.attackerRoot.certificate]
        return policy
    }

    private func fetch(_ url: URL, _ policy: SecurityPolicy, cache: URLCache) -> (HTTPRequestOperation, Outcome) {
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.securityPolicy = policy
        operation.urlCache = cache
        let outcome = run(operation)
        // Its store written now: the library's cache reports `.stored` once it is.
        (cache as? SQLiteURLCache)?.flush()
        return (operation, outcome)
    }

    private func body(_ operation: HTTPRequestOperation) -> String? {
        operation.responseData.map { String(decoding: $0, as: UTF8.self) }
    }

    func testAPinnedOperationIsNeverAnsweredWithWhatAnUnpinnedOneStoredFromTheAttacker() throws {
        let (url, attacker, genuine) = try attackedURL(attacker: try fixtures.attacker)
        let cache = makeCache()
        let (unpinned, _) = fetch(url, try trustingBoth(), cache: cache)
        XCTAssertEqual(unpinned.metrics?.cacheStatus, .stored)
        XCTAssertEqual(body(unpinned), "x v1 #2", "the attacker answered the unpinned operation")
        XCTAssertEqual(attacker.requests.count, 2)

        for (index, mode) in [SSLPinningMode.publicKey, .certificate].enumerated() {
            let (operation, outcome) = fetch(url, try pinned(mode), cache: cache)
            XCTAssertNil(outcome.error, "\(mode)")
            XCTAssertNotEqual(operation.metrics?.cacheStatus, .hit, "\(mode): answered from the attacker's entry")
            XCTAssertEqual(body(operation), "x v1 #\(index + 1)", "\(mode): the genuine server answers")
            XCTAssertEqual(genuine.requests.count, index + 1)
        }

        // The pinned app keeps its cache: the genuine response it stored answers it, in this process and
        // through a new instance over the same file (what a new process reads).
        (cache as? SQLiteURLCache)?.flush()
        for reader in [cache, makeCache()] {
            let (again, _) = fetch(url, try pinned(.certificate), cache: reader)
            XCTAssertEqual(again.metrics?.cacheStatus, .hit)
            XCTAssertEqual(body(again), "x v1 #2")
        }
        XCTAssertEqual(genuine.requests.count, 2)
        XCTAssertEqual(attacker.requests.count, 2, "the attacker was asked once, by the unpinned operation")
    }

    /// The attacker stays behind the relay for good: a pinned operation that is not answered from the
    /// cache meets it and refuses it, in a process of its own that reads the file this one wrote.
    func testAnotherProcessWithAPinIsNeitherAnsweredNorServedByTheAttacker() throws {
        let attacking = try server(try fixtures.attacker)
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(attacking.port)/cache/x?cc=max-age%3D600"))
        let (unpinned, _) = fetch(url, try trustingBoth(), cache: makeCache())
        XCTAssertEqual(unpinned.metrics?.cacheStatus, .stored)
        // The certificates go as files (DER): corelibs' base64 decoding leaks a small buffer each call,
        // which LeakSanitizer reports in the child.
        let pin = directory.appendingPathComponent("pin.der")
        let anchor = directory.appendingPathComponent("anchor.der")
        try fixtures.genuineRoot.certificate.write(to: pin)
        try fixtures.attackerRoot.certificate.write(to: anchor)
        try runChildHalf("CacheTrustTests/testChildHalfAPinnedLookupOfTheAttackersEntry", environment: [
            "ONET_TRUST_CHILD_URL": url.absoluteString,
            "ONET_TRUST_CHILD_DIRECTORY": directory.path,
            "ONET_TRUST_CHILD_PIN": pin.path,
            "ONET_TRUST_CHILD_ANCHOR": anchor.path,
        ])
        XCTAssertEqual(attacking.requests.count, 1, "the refused attacker received nothing from the child")
        let (same, _) = fetch(url, try trustingBoth(), cache: makeCache())
        XCTAssertEqual(same.metrics?.cacheStatus, .hit, "the entry still answers the trust it was fetched under")
    }

    /// The child half of the test above.
    func testChildHalfAPinnedLookupOfTheAttackersEntry() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let text = environment["ONET_TRUST_CHILD_URL"], let path = environment["ONET_TRUST_CHILD_DIRECTORY"],
              let pin = environment["ONET_TRUST_CHILD_PIN"].flatMap({ FileManager.default.contents(atPath: $0) }),
              let anchor = environment["ONET_TRUST_CHILD_ANCHOR"].flatMap({ FileManager.default.contents(atPath: $0) }) else {
            throw XCTSkip("the child half of testAnotherProcessWithAPinIsNeitherAnsweredNorServedByTheAttacker")
        }
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: URL(fileURLWithPath: path))
        for mode in [SSLPinningMode.publicKey, .certificate] {
            let policy = SecurityPolicy(pinningMode: mode, withPinnedCertificates: [pin])
            policy.additionalTrustAnchors = [anchor]
            let (operation, outcome) = fetch(try XCTUnwrap(URL(string: text)), policy, cache: cache)
            XCTAssertNotEqual(operation.metrics?.cacheStatus, .hit, "\(mode)")
            XCTAssertEqual(outcome.urlErrorCode, URLError.Code.serverCertificateUntrusted, "\(mode)")
            XCTAssertNil(operation.responseData, "\(mode)")
        }
    }

    func testWhatAllowInvalidCertificatesStoredNeverAnswersTheDefaultPolicy() throws {
        let attacking = try server(try fixtures.selfSigned)
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(attacking.port)/cache/x?cc=max-age%3D600"))
        let cache = makeCache()
        let lax = SecurityPolicy.default()
        lax.allowInvalidCertificates = true
        lax.validatesDomainName = false
        let (stored, _) = fetch(url, lax, cache: cache)
        XCTAssertEqual(stored.metrics?.cacheStatus, .stored)

        let (strict, outcome) = fetch(url, SecurityPolicy.default(), cache: cache)
        XCTAssertNotEqual(strict.metrics?.cacheStatus, .hit)
        XCTAssertEqual(outcome.urlErrorCode, .serverCertificateUntrusted)
        XCTAssertNil(strict.responseData)
        XCTAssertEqual(attacking.requests.count, 1, "the strict operation's request never reached the server")

        let (laxAgain, _) = fetch(url, lax, cache: cache)
        XCTAssertEqual(laxAgain.metrics?.cacheStatus, .hit, "the lax operations keep their cache")
    }

    /// A subclass decides trust in code: its entries answer that very instance, and no other (not even
    /// another instance of the same subclass with the same settings).
    func testAnOverridingPolicysEntriesAnswerThatInstanceAlone() throws {
        let attacking = try server(try fixtures.selfSigned)
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(attacking.port)/cache/x?cc=max-age%3D600"))
        let cache = makeCache()
        let approving = AcceptEverythingPolicy(pinningMode: .none)
        let (first, _) = fetch(url, approving, cache: cache)
        XCTAssertEqual(first.metrics?.cacheStatus, .stored)
        XCTAssertEqual(fetch(url, approving, cache: cache).0.metrics?.cacheStatus, .hit)
        XCTAssertEqual(fetch(url, AcceptEverythingPolicy(pinningMode: .none), cache: cache).0.metrics?.cacheStatus, .stored)
        XCTAssertEqual(attacking.requests.count, 2)
    }
}

/// Accepts every server: a stand-in for an app's "remember this certificate" policy.
private final class AcceptEverythingPolicy: SecurityPolicy, @unchecked Sendable {
    override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool { true }
}
