import CCurlShim
import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A policy as AFN apps subclassed it (openHAB's remembering policy): the base rules first, then the
/// certificates the user approved. It records every question the transport asked.
final class RememberingPolicy: SecurityPolicy, @unchecked Sendable {
    /// One question: the chain's leaf, the domain, and whether the network thread asked.
    struct Question {
        let leaf: Data?
        let domain: String?
        let onNetworkThread: Bool
    }

    private let approvalLock = NSLock()
    private var approved: Set<Data> = []      // guarded by approvalLock
    private var questions: [Question] = []    // guarded by approvalLock

    func approve(_ certificate: Data) {
        approvalLock.withLock { _ = approved.insert(certificate) }
    }

    var asked: [Question] { approvalLock.withLock { questions } }

    override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool {
        let question = Question(leaf: chain.first, domain: domain, onNetworkThread: ccurl_is_network_thread() != 0)
        approvalLock.withLock { questions.append(question) }
        if super.evaluateServerTrust(chain, forDomain: domain) { return true }
        guard let leaf = chain.first else { return false }
        return approvalLock.withLock { approved.contains(leaf) }
    }
}

/// A subclass with a designated initializer of its own: what the class documentation says it must
/// add (the two `required` initializers) is enough to compile, copy and archive it.
final class ApprovingPolicy: SecurityPolicy, @unchecked Sendable {
    let approved: Set<Data>

    init(approving approved: Set<Data>) {
        self.approved = approved
        super.init(pinningMode: .none, withPinnedCertificates: [])
    }

    required init(pinningMode: SSLPinningMode, withPinnedCertificates pinnedCertificates: Set<Data>) {
        approved = []
        super.init(pinningMode: pinningMode, withPinnedCertificates: pinnedCertificates)
    }

    required init?(coder: NSCoder) {
        approved = []
        super.init(coder: coder)
    }

    override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool {
        chain.first.map(approved.contains) ?? false
    }
}

/// The transport asks a subclass's `evaluateServerTrust(_:forDomain:)` for every new connection,
/// before any request byte, and keeps the connections it accepted to that instance.
final class PolicySubclassTests: LibraryTestCase {
    private static let identities = Result { try (TestCertificateAuthority.selfSigned(), TestCertificateAuthority.selfSigned()) }

    /// Two self-signed certificates no system store holds.
    private var identities: (approved: TestIdentity, unknown: TestIdentity) {
        get throws { try PolicySubclassTests.identities.get() }
    }

    func testTheSubclassAcceptsTheCertificateItApprovedAndRefusesAnother() throws {
        let (approved, unknown) = try identities
        let approvedServer = try TestServer(tls: approved)
        defer { approvedServer.shutdown() }
        let unknownServer = try TestServer(tls: unknown)
        defer { unknownServer.shutdown() }
        let policy = RememberingPolicy(pinningMode: .none)
        policy.approve(approved.certificate)

        XCTAssertNil(fetch(approvedServer.url("/echo"), policy: policy), "the approved certificate is accepted")
        XCTAssertEqual(approvedServer.requests.count, 1)

        let refusal = fetch(unknownServer.url("/echo"), policy: policy)
        XCTAssertEqual((refusal as? URLError)?.code, .serverCertificateUntrusted, "\(String(describing: refusal))")
        XCTAssertEqual(unknownServer.requests.count, 0, "a refused server receives no request")
        XCTAssertTrue((refusal as NSError?)?.localizedDescription.contains("RememberingPolicy.evaluateServerTrust") ?? false,
                      "the refusal names the deciding method: \(String(describing: refusal))")

        let asked = policy.asked
        XCTAssertEqual(asked.map(\.leaf), [approved.certificate, unknown.certificate], "asked once per new connection")
        XCTAssertEqual(asked.map(\.domain), ["127.0.0.1", "127.0.0.1"])
        XCTAssertEqual(asked.map(\.onNetworkThread), [true, true], "asked on the network thread")
    }

    func testAConnectionTheSubclassAcceptedServesNoOtherPolicy() throws {
        let approved = try identities.approved
        let server = try TestServer(tls: approved)
        defer { server.shutdown() }
        let url = server.url("/echo")
        let approving = RememberingPolicy(pinningMode: .none)
        approving.approve(approved.certificate)
        XCTAssertNil(fetch(url, policy: approving))
        XCTAssertNil(fetch(url, policy: approving), "the same instance may reuse its connection")
        XCTAssertEqual(server.requests.count, 2)

        // Equal settings, another instance that approved nothing: it is asked, and refuses.
        let other = RememberingPolicy(pinningMode: .none)
        XCTAssertEqual(other, approving, "equal settings")
        XCTAssertEqual((fetch(url, policy: other) as? URLError)?.code, .serverCertificateUntrusted)
        XCTAssertEqual(other.asked.map(\.leaf), [approved.certificate])
        XCTAssertEqual((fetch(url, policy: .default()) as? URLError)?.code, .serverCertificateUntrusted)
        XCTAssertEqual(server.requests.count, 2, "neither got the approved instance's connection")
    }

    /// Each connection ends after its response (`/close`): the subclass is asked about the chain of
    /// every new connection, not only the first.
    func testEveryNewConnectionPresentsItsChainToTheSubclass() throws {
        let approved = try identities.approved
        let server = try TestServer(tls: approved)
        defer { server.shutdown() }
        let policy = RememberingPolicy(pinningMode: .none)
        policy.approve(approved.certificate)
        for _ in 0..<3 {
            XCTAssertNil(fetch(server.url("/close"), policy: policy))
        }
        XCTAssertEqual(server.requests.count, 3)
        XCTAssertEqual(policy.asked.map(\.leaf), Array(repeating: approved.certificate, count: 3))
    }

    func testASubclassWithItsOwnInitializerDecidesCopiesAndArchives() throws {
        let (approved, unknown) = try identities
        let server = try TestServer(tls: approved)
        defer { server.shutdown() }
        let policy = ApprovingPolicy(approving: [approved.certificate])
        XCTAssertNil(fetch(server.url("/echo"), policy: policy))
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertFalse(policy.evaluateServerTrust(unknown.chain, forDomain: "127.0.0.1"))

        XCTAssertTrue(policy.copy() is ApprovingPolicy, "copies are made through the required initializer")
        let archive = try SafeArchive.archive(policy)
        XCTAssertTrue(try SafeArchive.unarchive(ApprovingPolicy.self, from: archive).isKind(of: ApprovingPolicy.self))
    }

    // MARK: - Without a network

    /// Only a subclass is asked; the base class (the default above all) is decided from its settings.
    func testOnlySubclassesAreAskedAndTheDefaultStaysPlain() throws {
        let pinning = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [try identities.approved.certificate])
        XCTAssertNil(SecurityPolicy.default().snapshot.evaluator)
        XCTAssertTrue(SecurityPolicy.default().snapshot.isSystemDefault)
        XCTAssertNil(pinning.snapshot.evaluator)

        let subclass = RememberingPolicy(pinningMode: .none)
        XCTAssertTrue(subclass.snapshot.evaluator?.policy === subclass)
        XCTAssertFalse(subclass.snapshot.isSystemDefault, "a subclass with default settings still decides itself")
        XCTAssertEqual(subclass.snapshot.evaluator, subclass.snapshot.evaluator)
        XCTAssertNotEqual(subclass.snapshot.evaluator, RememberingPolicy(pinningMode: .none).snapshot.evaluator)
        XCTAssertEqual(subclass.hash, SecurityPolicy.default().hash, "equality and hashing see the settings only")
    }

    /// Accepted connections are keyed by the whole policy, not a hash of it.
    func testTrustedConnectionsAreKeyedByTheWholePolicy() throws {
        let certificate = try identities.approved.certificate
        let connection = "127.0.0.1:443<-127.0.0.1:50000"
        let pinning = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [certificate]).snapshot
        var otherPins = pinning
        otherPins.pinned = [try identities.unknown.certificate]
        let first = RememberingPolicy(pinningMode: .none).snapshot
        let second = RememberingPolicy(pinningMode: .none).snapshot

        let trusted = TrustedConnections()
        trusted.insert(TrustedConnections.Key(policy: pinning, connection: connection))
        trusted.insert(TrustedConnections.Key(policy: first, connection: connection))
        XCTAssertTrue(trusted.contains(TrustedConnections.Key(policy: pinning, connection: connection)))
        XCTAssertTrue(trusted.contains(TrustedConnections.Key(policy: first, connection: connection)))
        XCTAssertFalse(trusted.contains(TrustedConnections.Key(policy: otherPins, connection: connection)))
        XCTAssertFalse(trusted.contains(TrustedConnections.Key(policy: second, connection: connection)))
        XCTAssertFalse(trusted.contains(TrustedConnections.Key(policy: SecurityPolicy.defaultSnapshot, connection: connection)))
        XCTAssertFalse(trusted.contains(TrustedConnections.Key(policy: pinning, connection: "127.0.0.1:443<-127.0.0.1:50001")))
        // The key holds a number for the instance, not the instance.
        XCTAssertNil(TrustedConnections.Key(policy: first, connection: connection).settings.evaluator)
    }
}
