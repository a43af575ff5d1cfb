import CCurl
import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Pins attacked as an on-path attacker would: a server of the attacker's own presents the pinned
/// certificate (public data) appended to its chain. The pin binds to the path verification built
/// (or, under `allowInvalidCertificates`, to the leaf's chain of signatures), so an appended
/// certificate never satisfies it, and the refused server never receives a byte of the request.
final class PinningAttackTests: LibraryTestCase {
    private static let fixtures = Result { try Fixtures() }

    struct Fixtures {
        /// The genuine site: a CA-issued leaf (root → intermediate → leaf) and a self-signed server.
        let root: TestCertificateAuthority
        let intermediate: TestCertificateAuthority
        let genuine: TestIdentity
        let genuineSelfSigned: TestIdentity
        /// The attacker: a self-signed leaf, and a CA the client trusts (an added anchor stands for a
        /// mis-issuing public CA or a corporate root).
        let attackerSelfSigned: TestIdentity
        let attackerRoot: TestCertificateAuthority
        let attackerTrusted: TestIdentity

        init() throws {
            root = try TestCertificateAuthority(commonName: "Genuine Root")
            intermediate = try root.intermediate(commonName: "Genuine Intermediate")
            genuine = try intermediate.issue()
            genuineSelfSigned = try TestCertificateAuthority.selfSigned()
            attackerSelfSigned = try TestCertificateAuthority.selfSigned()
            attackerRoot = try TestCertificateAuthority(commonName: "Attacker Root")
            attackerTrusted = try attackerRoot.issue()
        }

        /// Every certificate a user might pin for the genuine site.
        var pins: [(String, Data)] {
            [("self-signed leaf", genuineSelfSigned.certificate), ("CA-issued leaf", genuine.certificate),
             ("intermediate", intermediate.certificate), ("root", root.certificate)]
        }
    }

    private var fixtures: Fixtures { get throws { try PinningAttackTests.fixtures.get() } }

    private func policy(_ mode: SSLPinningMode, pinning pinned: Data, allowInvalid: Bool,
                        anchors: Set<Data> = []) -> SecurityPolicy {
        let policy = SecurityPolicy(pinningMode: mode, withPinnedCertificates: [pinned])
        policy.allowInvalidCertificates = allowInvalid
        policy.additionalTrustAnchors = anchors
        return policy
    }

    /// One request to a server presenting `identity`; the error and how many requests it received.
    private func attempt(_ identity: TestIdentity, _ policy: SecurityPolicy) throws -> (Error?, Int) {
        let server = try TestServer(tls: identity)
        defer { server.shutdown() }
        var request = URLRequest(url: try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)/echo")))
        request.setValue("Bearer secret-token", forHTTPHeaderField: "Authorization")
        let operation = HTTPRequestOperation(request: request)
        operation.securityPolicy = policy
        let error = run(operation).error
        return (error, server.requests.count)
    }

    private func assertRefused(_ identity: TestIdentity, _ policy: SecurityPolicy, _ label: String,
                               line: UInt = #line) throws {
        let (error, received) = try attempt(identity, policy)
        XCTAssertEqual((error as? URLError)?.code, .serverCertificateUntrusted, "\(label): \(String(describing: error))",
                       line: line)
        XCTAssertEqual(received, 0, "\(label): the refused server received the request", line: line)
    }

    private func assertAccepted(_ identity: TestIdentity, _ policy: SecurityPolicy, _ label: String,
                                line: UInt = #line) throws {
        let (error, received) = try attempt(identity, policy)
        XCTAssertNil(error, "\(label): \(String(describing: error))", line: line)
        XCTAssertEqual(received, 1, label, line: line)
    }

    private static let settings: [(SSLPinningMode, Bool)] =
        [(.certificate, false), (.certificate, true), (.publicKey, false), (.publicKey, true)]

    func testASelfSignedAttackerWithThePinAppendedIsRefused() throws {
        let f = try fixtures
        for (mode, allowInvalid) in Self.settings {
            for (name, pinned) in f.pins {
                let label = "\(mode) allowInvalid=\(allowInvalid) pinning the \(name)"
                try assertRefused(f.attackerSelfSigned.appending([pinned]), policy(mode, pinning: pinned, allowInvalid: allowInvalid),
                                  label)
            }
        }
    }

    func testACATrustedAttackerWithThePinAppendedIsRefused() throws {
        let f = try fixtures
        let trusted: Set<Data> = [f.attackerRoot.certificate]
        // The attacker's chain verifies on its own: only the pin stands in its way.
        let unpinned = SecurityPolicy.default()
        unpinned.additionalTrustAnchors = trusted
        try assertAccepted(f.attackerTrusted, unpinned, "the attacker's CA is trusted")
        for (mode, allowInvalid) in Self.settings {
            for (name, pinned) in f.pins {
                let label = "\(mode) allowInvalid=\(allowInvalid) pinning the \(name), attacker CA trusted"
                try assertRefused(f.attackerTrusted.appending([pinned]),
                                  policy(mode, pinning: pinned, allowInvalid: allowInvalid, anchors: trusted), label)
            }
        }
    }

    func testTheGenuineServerIsStillAccepted() throws {
        let f = try fixtures
        for (mode, allowInvalid) in Self.settings {
            let prefix = "\(mode) allowInvalid=\(allowInvalid)"
            try assertAccepted(f.genuineSelfSigned, policy(mode, pinning: f.genuineSelfSigned.certificate, allowInvalid: allowInvalid),
                               "\(prefix): self-signed, pinned")
            for (name, pinned) in f.pins.dropFirst() {
                try assertAccepted(f.genuine, policy(mode, pinning: pinned, allowInvalid: allowInvalid),
                                   "\(prefix): CA-issued, \(name) pinned")
            }
        }
    }

    /// A key pin matches a renewed certificate with the same key; a certificate the server appends
    /// that carries the pinned key but signs nothing on the leaf's path does not count.
    func testAPinnedKeyCountsOnlyOnTheLeafsPath() throws {
        let f = try fixtures
        let chain = f.attackerSelfSigned.chain + [f.genuineSelfSigned.certificate]
        for allowInvalid in [false, true] {
            let policy = policy(.publicKey, pinning: f.genuineSelfSigned.certificate, allowInvalid: allowInvalid)
            XCTAssertFalse(policy.evaluateServerTrust(chain, forDomain: "127.0.0.1"), "allowInvalid=\(allowInvalid)")
            XCTAssertTrue(policy.evaluateServerTrust(f.genuineSelfSigned.chain, forDomain: "127.0.0.1"),
                          "allowInvalid=\(allowInvalid)")
        }
        // A pinned CA that the server does not send still vouches for the leaf it signed.
        let rootPinned = policy(.publicKey, pinning: f.root.certificate, allowInvalid: true)
        XCTAssertTrue(rootPinned.evaluateServerTrust(f.genuine.chain, forDomain: "localhost"))
        XCTAssertFalse(rootPinned.evaluateServerTrust(f.attackerTrusted.chain + [f.root.certificate], forDomain: "localhost"))
    }

    /// A pinned server whose certificate names another host is refused, and the error says so.
    func testAPinnedCertificateForAnotherHostSaysSo() throws {
        let f = try fixtures
        let other = try f.intermediate.issue(commonName: "example.com", dnsNames: ["example.com"], ipAddresses: ["10.9.9.9"])
        for mode in [SSLPinningMode.certificate, .publicKey] {
            let (error, received) = try attempt(other, policy(mode, pinning: f.root.certificate, allowInvalid: false))
            XCTAssertEqual((error as? URLError)?.code, .serverCertificateUntrusted, "\(mode)")
            XCTAssertEqual(received, 0)
            let description = (error as NSError?)?.localizedDescription ?? ""
            XCTAssertTrue(description.contains("does not match the host 127.0.0.1"), "\(mode): \(description)")
        }
    }

    /// Added anchors reach TLS connections through a trust store built once: new connections with
    /// added anchors read no CA bundle again (the bundle is hundreds of KiB; the process's read bytes
    /// are counted in /proc/self/io).
    func testAddedAnchorsDoNotReparseTheSystemBundleForEachConnection() throws {
        let f = try fixtures
        let bundlePath = try XCTUnwrap(curl_version_info(CURLVERSION_ELEVENTH)?.pointee.cainfo.map { String(cString: $0) })
        let bundleSize = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: bundlePath)[.size] as? Int)
        XCTAssertGreaterThan(TrustStore.systemCertificateCount, 0, "the system bundle at \(bundlePath) was read")
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [f.root.certificate]
        try assertAccepted(f.genuine, policy, "warm-up")
        let before = try bytesReadByProcess()
        let connections = 8
        for index in 0..<connections {
            try assertAccepted(f.genuine, policy, "connection \(index)")
        }
        let read = try bytesReadByProcess() - before
        XCTAssertLessThan(read, bundleSize, "\(connections) new connections read \(read) bytes; the bundle is \(bundleSize)")
        XCTAssertTrue(TrustStore.store(anchors: [f.root.certificate], includesSystem: true)
            === TrustStore.store(anchors: [f.root.certificate], includesSystem: true), "one store per set of anchors")
    }

    private func bytesReadByProcess() throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/io", encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("rchar:") })
        return try XCTUnwrap(Int(line.dropFirst("rchar:".count).trimmingCharacters(in: .whitespaces)))
    }
}
