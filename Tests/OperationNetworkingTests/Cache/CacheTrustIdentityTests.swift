import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The trust identity an `https` entry records: the same for the same settings in any instance (so a
/// new process finds its entries), different for every setting that decides a connection's trust.
final class CacheTrustIdentityTests: LibraryTestCase {
    private func identity(_ policy: SecurityPolicy?, _ client: ClientCertificate? = nil) -> String {
        CacheTrust.identity(of: policy?.snapshot, clientCertificate: client)
    }

    func testTheDefaultIsSystemAndEverySettingChangesIt() throws {
        XCTAssertEqual(identity(nil), CacheTrust.system)
        XCTAssertEqual(identity(.default()), CacheTrust.system)

        let root = try TestCertificateAuthority(commonName: "Identity Root")
        let other = try TestCertificateAuthority(commonName: "Identity Other")
        let leaf = try root.issue()
        func pinned(_ mode: SSLPinningMode, _ pins: Set<Data>) -> SecurityPolicy {
            SecurityPolicy(pinningMode: mode, withPinnedCertificates: pins)
        }
        let anchored = SecurityPolicy.default()
        anchored.additionalTrustAnchors = [root.certificate]
        let lax = SecurityPolicy.default()
        lax.allowInvalidCertificates = true
        lax.validatesDomainName = false
        let hostless = SecurityPolicy.default()
        hostless.validatesDomainName = false
        let client = ClientCertificate(certificate: leaf.certificate, certificateFormat: .der,
                                       privateKey: Data(leaf.privateKeyPEM.utf8), privateKeyFormat: .pem, passphrase: "p")
        let identities = [
            identity(nil), identity(pinned(.publicKey, [root.certificate])), identity(pinned(.certificate, [root.certificate])),
            identity(pinned(.certificate, [other.certificate])), identity(pinned(.certificate, [root.certificate, other.certificate])),
            identity(anchored), identity(lax), identity(hostless), identity(nil, client),
        ]
        XCTAssertEqual(Set(identities).count, identities.count, "two settings share an identity: \(identities)")

        // The same settings in other instances, pins in another order: the same identity.
        XCTAssertEqual(identity(pinned(.certificate, [other.certificate, root.certificate])),
                       identity(pinned(.certificate, [root.certificate, other.certificate])))
        XCTAssertEqual(identity(pinned(.publicKey, [root.certificate]).copy() as? SecurityPolicy),
                       identity(pinned(.publicKey, [root.certificate])))
        for text in identities {
            XCTAssertFalse(text.contains("\"p\"") || text.contains(leaf.privateKeyPEM), "a secret in \(text)")
        }
    }

    /// The identity is made of a description the policy keeps of its settings, made when one changes
    /// (issue 57: hashing the certificates for every request cost more than the request's fetch): it
    /// stays the description the settings give after every change, through every setter and a copy.
    func testThePolicysDescriptionFollowsEverySetting() throws {
        let root = try TestCertificateAuthority(commonName: "Description Root")
        let policy = SecurityPolicy(pinningMode: .certificate, withPinnedCertificates: [])
        func check(_ step: String) {
            let snapshot = policy.snapshot
            XCTAssertEqual(snapshot.cacheDescription, CacheTrust.describe(snapshot), step)
            XCTAssertTrue(identity(policy).hasPrefix(snapshot.cacheDescription + ";client="), step)
        }
        check("made")
        policy.pinnedCertificates = [root.certificate]
        check("pinned")
        policy.additionalTrustAnchors = [root.certificate]
        check("anchors")
        policy.allowInvalidCertificates = true
        check("allowInvalid")
        policy.validatesDomainName = false
        check("validatesDomainName")
        let copy = try XCTUnwrap(policy.copy() as? SecurityPolicy)
        XCTAssertEqual(copy.snapshot.cacheDescription, policy.snapshot.cacheDescription, "a copy")
    }

    func testAnOverridingSubclassIsItsOwnInstanceAlone() {
        let first = OverridingPolicy(pinningMode: .none)
        XCTAssertEqual(identity(first), identity(first))
        XCTAssertNotEqual(identity(first), identity(OverridingPolicy(pinningMode: .none)))
        XCTAssertNotEqual(identity(first), CacheTrust.system)
    }

    func testOnlyHTTPSEntriesAreBoundToATrust() throws {
        let https = try XCTUnwrap(URL(string: "https://example.com/a"))
        let http = try XCTUnwrap(URL(string: "http://example.com/a"))
        XCTAssertFalse(CacheTrust.admits(recorded: "mode=1", current: CacheTrust.system, for: https))
        XCTAssertTrue(CacheTrust.admits(recorded: nil, current: CacheTrust.system, for: https), "an app's own entry")
        XCTAssertFalse(CacheTrust.admits(recorded: nil, current: "mode=1", for: https))
        XCTAssertTrue(CacheTrust.admits(recorded: "mode=1", current: CacheTrust.system, for: http))
        XCTAssertNil(CacheTrust.recorded("mode=1", for: http))
        XCTAssertEqual(CacheTrust.recorded("mode=1", for: https), "mode=1")
    }
}

/// A subclass that decides trust itself.
private final class OverridingPolicy: SecurityPolicy, @unchecked Sendable {
    override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool { true }
}
