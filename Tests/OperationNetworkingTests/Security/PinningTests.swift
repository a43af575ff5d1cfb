import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// SecurityPolicy against a real HTTPS server whose certificates are made for the test run.
/// A refused server must never receive the request.
final class PinningTests: LibraryTestCase {
    private static let fixtures = Result { try Fixtures() }

    /// The certificates of the run: a root, an intermediate under it, an unrelated root, and leaves.
    struct Fixtures {
        let root: TestCertificateAuthority
        let intermediate: TestCertificateAuthority
        let unrelated: TestCertificateAuthority
        let leaf: TestIdentity
        let expired: TestIdentity
        let notYetValid: TestIdentity
        let wrongHost: TestIdentity
        let selfSigned: TestIdentity

        init() throws {
            root = try TestCertificateAuthority(commonName: "OperationNetworking Test Root")
            intermediate = try root.intermediate(commonName: "OperationNetworking Test Intermediate")
            unrelated = try TestCertificateAuthority(commonName: "Unrelated Root")
            leaf = try intermediate.issue()
            expired = try intermediate.issue(notValidBefore: Date().addingTimeInterval(-86400 * 10),
                                             notValidAfter: Date().addingTimeInterval(-86400))
            notYetValid = try intermediate.issue(notValidBefore: Date().addingTimeInterval(86400),
                                                 notValidAfter: Date().addingTimeInterval(86400 * 10))
            wrongHost = try intermediate.issue(commonName: "example.com", dnsNames: ["example.com"], ipAddresses: ["10.9.9.9"])
            selfSigned = try TestCertificateAuthority.selfSigned()
        }
    }

    private var fixtures: Fixtures { get throws { try PinningTests.fixtures.get() } }

    /// Runs one GET against an HTTPS server presenting `identity`, under `policy`.
    private func fetch(_ identity: TestIdentity, policy: SecurityPolicy, host: String = "127.0.0.1") throws -> (Error?, Int) {
        let server = try TestServer(tls: identity)
        defer { server.shutdown() }
        let error = fetch(try XCTUnwrap(URL(string: "https://\(host):\(server.port)/echo")), policy: policy)
        return (error, server.requests.count)
    }

    private func assertRefused(_ result: (Error?, Int), file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual((result.0 as? URLError)?.code, .serverCertificateUntrusted,
                       "\(String(describing: result.0))", file: file, line: line)
        XCTAssertEqual(result.1, 0, "a refused server must not receive the request", file: file, line: line)
    }

    private func assertAccepted(_ result: (Error?, Int), file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(result.0, "\(String(describing: result.0))", file: file, line: line)
        XCTAssertEqual(result.1, 1, file: file, line: line)
    }

    // MARK: - Default policy (system trust)

    func testDefaultPolicyRefusesAnUnknownCA() throws {
        let result = try fetch(try fixtures.leaf, policy: .default())
        XCTAssertEqual((result.0 as? URLError)?.code, .serverCertificateUntrusted)
        XCTAssertEqual(result.1, 0)
        XCTAssertNotNil((result.0 as? URLError)?.userInfo[CurlErrorMessageKey])
    }

    func testAddedTrustAnchorIsAcceptedWithVerificationOn() throws {
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [try fixtures.root.certificate]
        assertAccepted(try fetch(try fixtures.leaf, policy: policy))
        assertAccepted(try fetch(try fixtures.leaf, policy: policy, host: "localhost"))
        XCTAssertNotEqual((try fetch(try fixtures.expired, policy: policy).0 as? URLError)?.code, nil)
        XCTAssertNotNil(try fetch(try fixtures.wrongHost, policy: policy).0)
    }

    func testAllowInvalidWithDomainValidationAndNoPinsRefuses() throws {
        let policy = SecurityPolicy.default()
        policy.allowInvalidCertificates = true
        assertRefused(try fetch(try fixtures.selfSigned, policy: policy))
        policy.validatesDomainName = false
        assertAccepted(try fetch(try fixtures.selfSigned, policy: policy))
    }

    // MARK: - Certificate pinning

    func testPinningTheRootTheIntermediateOrTheLeafAccepts() throws {
        let f = try fixtures
        for pinned in [f.root.certificate, f.intermediate.certificate, f.leaf.certificate] {
            assertAccepted(try fetch(f.leaf, policy: SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [pinned])))
        }
    }

    func testPinningAnUnrelatedCertificateRefuses() throws {
        let f = try fixtures
        assertRefused(try fetch(f.leaf, policy: SecurityPolicy(pinningMode: .certificate,
                                                               withPinnedCertificates: [f.unrelated.certificate])))
    }

    func testPinningWithAnEmptySetRefusesEverythingAndSaysWhy() throws {
        let f = try fixtures
        for mode in [SSLPinningMode.certificate, .publicKey] {
            let result = try fetch(f.leaf, policy: SecurityPolicy(pinningMode: mode, withPinnedCertificates: []))
            assertRefused(result)
            let description = (result.0 as NSError?)?.localizedDescription ?? ""
            XCTAssertTrue(description.contains("no pinned certificates"), description)
        }
        let wrongPin = try fetch(f.leaf, policy: SecurityPolicy(pinningMode: .certificate,
                                                                withPinnedCertificates: [f.unrelated.certificate]))
        XCTAssertFalse((wrongPin.0 as NSError?)?.localizedDescription.contains("no pinned certificates") ?? true,
                       "a non-empty set that does not match is a different refusal")
    }

    /// AFN's `policyWithPinningMode:` pinned the app bundle's certificates; here `Bundle.main`'s
    /// `.cer/.der/.crt/.pem` resources, so a pinning policy made without certificates pins them.
    func testPinningModeWithoutCertificatesPinsTheMainBundlesCertificates() throws {
        let f = try fixtures
        let resources = Bundle.main.resourceURL ?? Bundle.main.bundleURL
        let file = resources.appendingPathComponent("onet-pin-\(UUID().uuidString).cer")
        do {
            try f.root.certificate.write(to: file)
        } catch {
            throw XCTSkip("Bundle.main's resource directory is not writable here: \(error)")
        }
        defer { try? FileManager.default.removeItem(at: file) }
        let policy = SecurityPolicy(pinningMode: .certificate)
        XCTAssertTrue(policy.pinnedCertificates.contains(f.root.certificate))
        XCTAssertEqual(policy.pinnedCertificates, SecurityPolicy.certificates(in: resources))
        assertAccepted(try fetch(f.leaf, policy: policy))
        XCTAssertTrue(SecurityPolicy(pinningMode: .none).pinnedCertificates.isEmpty, "no pinning, nothing loaded")
        XCTAssertTrue(SecurityPolicy.default().pinnedCertificates.isEmpty)
        // A directory bundle of its own: only the certificate files count.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-bundle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try f.unrelated.certificate.write(to: directory.appendingPathComponent("server.der"))
        try Data("not a certificate".utf8).write(to: directory.appendingPathComponent("notes.txt"))
        let bundle = try XCTUnwrap(Bundle(url: directory))
        XCTAssertEqual(SecurityPolicy.defaultPinnedCertificates(in: bundle), [f.unrelated.certificate])
    }

    func testExpiredNotYetValidAndWrongHostAreRefusedUnderPinning() throws {
        let f = try fixtures
        let policy = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.root.certificate])
        assertRefused(try fetch(f.expired, policy: policy))
        assertRefused(try fetch(f.notYetValid, policy: policy))
        assertRefused(try fetch(f.wrongHost, policy: policy))
        policy.validatesDomainName = false
        assertAccepted(try fetch(f.wrongHost, policy: policy))
    }

    func testSelfSignedLeafCanBePinned() throws {
        let f = try fixtures
        assertAccepted(try fetch(f.selfSigned, policy: SecurityPolicy(pinningMode: .certificate,
                                                                      withPinnedCertificates: [f.selfSigned.certificate])))
        assertRefused(try fetch(f.selfSigned, policy: .default()))
    }

    func testAllowInvalidRelaxesValidityButNeverThePin() throws {
        let f = try fixtures
        let pinnedLeaf = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.expired.certificate])
        pinnedLeaf.allowInvalidCertificates = true
        assertAccepted(try fetch(f.expired, policy: pinnedLeaf))
        let wrongPin = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.unrelated.certificate])
        wrongPin.allowInvalidCertificates = true
        assertRefused(try fetch(f.expired, policy: wrongPin))
        let wrongKey = SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: [f.unrelated.certificate])
        wrongKey.allowInvalidCertificates = true
        assertRefused(try fetch(f.expired, policy: wrongKey))
    }

    // MARK: - Public-key pinning

    func testPublicKeyPinMatchesAnywhereInTheChain() throws {
        let f = try fixtures
        // The intermediate's key is presented by the server; the root's is not presented but anchors the chain.
        for pinned in [f.leaf.certificate, f.intermediate.certificate] {
            assertAccepted(try fetch(f.leaf, policy: SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: [pinned, f.root.certificate])))
        }
        assertRefused(try fetch(f.leaf, policy: SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: [f.unrelated.certificate])))
    }

    func testPublicKeyPinningStillChecksTheHost() throws {
        let f = try fixtures
        let policy = SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: [f.wrongHost.certificate, f.root.certificate])
        assertRefused(try fetch(f.wrongHost, policy: policy))
        policy.allowInvalidCertificates = true
        assertRefused(try fetch(f.wrongHost, policy: policy))   // AFN skipped the host here; this library does not
    }

    // MARK: - The decision on its own, and the plumbing

    func testEvaluateServerTrustWithChainsAsData() throws {
        let f = try fixtures
        let chain = f.leaf.chain
        XCTAssertTrue(SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.root.certificate])
            .evaluateServerTrust(chain, forDomain: "localhost"))
        XCTAssertFalse(SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.root.certificate])
            .evaluateServerTrust(chain, forDomain: "example.org"))
        XCTAssertTrue(SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.root.certificate])
            .evaluateServerTrust(chain, forDomain: nil))
        XCTAssertFalse(SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.unrelated.certificate])
            .evaluateServerTrust(chain, forDomain: "127.0.0.1"))
        XCTAssertFalse(SecurityPolicy.default().evaluateServerTrust(chain, forDomain: "localhost"), "not in the system store")
        XCTAssertFalse(SecurityPolicy.default().evaluateServerTrust([], forDomain: nil))
        XCTAssertFalse(SecurityPolicy.default().evaluateServerTrust([Data("garbage".utf8)], forDomain: nil))
    }

    func testCertificatesAreLoadedFromADirectory() throws {
        let f = try fixtures
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try f.root.certificate.write(to: directory.appendingPathComponent("root.cer"))
        try Data(CertificateData.pem([f.intermediate.certificate, f.leaf.certificate]).utf8)
            .write(to: directory.appendingPathComponent("bundle.pem"))
        try Data("not a certificate".utf8).write(to: directory.appendingPathComponent("junk.crt"))
        try f.unrelated.certificate.write(to: directory.appendingPathComponent("ignored.txt"))
        XCTAssertEqual(SecurityPolicy.certificates(in: directory),
                       [f.root.certificate, f.intermediate.certificate, f.leaf.certificate])
    }

    func testCopiesKeepThePolicy() throws {
        let f = try fixtures
        let policy = SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: [f.leaf.certificate])
        policy.allowInvalidCertificates = true
        let copy = try XCTUnwrap(policy.copy() as? SecurityPolicy)
        XCTAssertFalse(copy === policy)
        XCTAssertEqual(copy.sslPinningMode, .publicKey)
        XCTAssertEqual(copy.pinnedCertificates, policy.pinnedCertificates)
        XCTAssertTrue(copy.allowInvalidCertificates)
        copy.allowInvalidCertificates = false
        XCTAssertTrue(policy.allowInvalidCertificates, "the copy shares no state")

        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "https://example.invalid/"))))
        operation.securityPolicy = policy
        let copiedOperation = try XCTUnwrap(operation.copy() as? HTTPRequestOperation)
        XCTAssertEqual(copiedOperation.securityPolicy.sslPinningMode, .publicKey, "AFN dropped the policy on copy")
        XCTAssertEqual(copiedOperation.securityPolicy.pinnedCertificates, [f.leaf.certificate])

        let manager = HTTPRequestOperationManager(baseURL: URL(string: "https://example.invalid/"))
        manager.securityPolicy = policy
        manager.operationQueue.isSuspended = true
        let made = try XCTUnwrap(manager.GET("x", parameters: nil, success: nil, failure: nil))
        XCTAssertTrue(made.securityPolicy === policy)
        manager.operationQueue.cancelAllOperations()
        manager.operationQueue.isSuspended = false
    }

    func testReusedConnectionsAreNotSharedAcrossPolicies() throws {
        let f = try fixtures
        let server = try TestServer(tls: f.leaf)
        defer { server.shutdown() }
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)/echo"))
        let good = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.root.certificate])
        XCTAssertNil(fetch(url, policy: good))
        XCTAssertNil(fetch(url, policy: good), "the same policy may reuse its connection")
        let bad = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [f.unrelated.certificate])
        XCTAssertEqual((fetch(url, policy: bad) as? URLError)?.code, .serverCertificateUntrusted)
        XCTAssertEqual(server.requests.count, 2)
    }
}
