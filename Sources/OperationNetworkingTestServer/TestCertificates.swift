import CTestCrypto
import Foundation

/// A certificate and its private key, made for one test run (never a key of real use).
public struct TestIdentity: Sendable {
    /// The certificate, DER.
    public let certificate: Data
    /// The certificate's issuers up to (not including) the root, DER, nearest first.
    public let intermediates: [Data]
    /// The private key, PEM (PKCS#8).
    public let privateKeyPEM: String

    /// The certificate followed by its intermediates: what a server presents.
    public var chain: [Data] { [certificate] + intermediates }

    /// The same identity presenting `certificates` after its own chain, as an attacker appends a
    /// pinned certificate (public data) to a chain of its own.
    public func appending(_ certificates: [Data]) -> TestIdentity {
        TestIdentity(certificate: certificate, intermediates: intermediates + certificates, privateKeyPEM: privateKeyPEM)
    }
}

/// A certificate authority made in memory for tests: issues server and client certificates with
/// chosen names and validity (expired, not yet valid, wrong host, …). Keys are P-256, signatures
/// ECDSA with SHA-256, made by the system's OpenSSL (`CTestCrypto`).
///
/// - Threading: immutable; any thread.
public struct TestCertificateAuthority: Sendable {
    /// The CA's own identity (its key is `identity.privateKeyPEM`).
    public let identity: TestIdentity
    /// The CA's common name: the issuer of what it signs.
    private let commonName: String
    /// What a server presents above its leaf when this CA issued it: this CA and its issuers below the root.
    private let presentedIssuers: [Data]

    /// A new self-signed root CA named `commonName`.
    public init(commonName: String) throws {
        let key = try TestCertificateAuthority.newKey()
        let certificate = try TestCertificateAuthority.sign(subject: commonName, key: key, issuer: commonName,
                                                            issuerKey: key, isAuthority: true, altNames: "")
        self.init(commonName: commonName, identity: TestIdentity(certificate: certificate, intermediates: [], privateKeyPEM: key),
                  presentedIssuers: [])
    }

    private init(commonName: String, identity: TestIdentity, presentedIssuers: [Data]) {
        self.commonName = commonName
        self.identity = identity
        self.presentedIssuers = presentedIssuers
    }

    /// The CA certificate, DER.
    public var certificate: Data { identity.certificate }

    /// A subordinate CA signed by this one.
    public func intermediate(commonName: String) throws -> TestCertificateAuthority {
        let key = try TestCertificateAuthority.newKey()
        let certificate = try TestCertificateAuthority.sign(subject: commonName, key: key, issuer: self.commonName,
                                                            issuerKey: identity.privateKeyPEM, isAuthority: true, altNames: "")
        return TestCertificateAuthority(
            commonName: commonName,
            identity: TestIdentity(certificate: certificate, intermediates: presentedIssuers, privateKeyPEM: key),
            presentedIssuers: [certificate] + presentedIssuers)
    }

    /// Issues a leaf for `dnsNames` and `ipAddresses` (IPv4 literals), valid over the given window.
    public func issue(commonName: String = "localhost", dnsNames: [String] = ["localhost"],
                      ipAddresses: [String] = ["127.0.0.1"], notValidBefore: Date = Date().addingTimeInterval(-3600),
                      notValidAfter: Date = Date().addingTimeInterval(86400)) throws -> TestIdentity {
        let key = try TestCertificateAuthority.newKey()
        let certificate = try TestCertificateAuthority.sign(
            subject: commonName, key: key, issuer: self.commonName, issuerKey: identity.privateKeyPEM, isAuthority: false,
            altNames: TestCertificateAuthority.altNames(dnsNames, ipAddresses),
            notValidBefore: notValidBefore, notValidAfter: notValidAfter)
        return TestIdentity(certificate: certificate, intermediates: presentedIssuers, privateKeyPEM: key)
    }

    /// A self-signed leaf for `dnsNames` and `ipAddresses`: no CA vouches for it.
    public static func selfSigned(dnsNames: [String] = ["localhost"],
                                  ipAddresses: [String] = ["127.0.0.1"]) throws -> TestIdentity {
        let key = try newKey()
        let certificate = try sign(subject: "self-signed", key: key, issuer: "self-signed", issuerKey: key,
                                   isAuthority: false, altNames: altNames(dnsNames, ipAddresses))
        return TestIdentity(certificate: certificate, intermediates: [], privateKeyPEM: key)
    }

    /// Why a certificate or key could not be made (OpenSSL refused; not expected).
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// A new P-256 key, PEM (PKCS#8).
    private static func newKey() throws -> String {
        guard let pem = ctc_new_key_pem() else { throw Failure(description: "OpenSSL made no P-256 key") }
        defer { ctc_free(pem) }
        return String(cString: pem)
    }

    /// Subject alternative names in OpenSSL's syntax; addresses that are not IPv4 literals are left out.
    private static func altNames(_ dnsNames: [String], _ ipAddresses: [String]) -> String {
        let addresses = ipAddresses.filter { $0.split(separator: ".").compactMap { UInt8($0) }.count == 4 }
        return (dnsNames.map { "DNS:\($0)" } + addresses.map { "IP:\($0)" }).joined(separator: ",")
    }

    private static func sign(subject: String, key: String, issuer: String, issuerKey: String, isAuthority: Bool,
                             altNames: String, notValidBefore: Date = Date().addingTimeInterval(-3600),
                             notValidAfter: Date = Date().addingTimeInterval(86400 * 30)) throws -> Data {
        var der: UnsafeMutablePointer<UInt8>?
        let length = ctc_sign_certificate(subject, key, issuer, issuerKey, isAuthority ? 1 : 0, altNames,
                                          Int64(notValidBefore.timeIntervalSince1970),
                                          Int64(notValidAfter.timeIntervalSince1970), &der)
        defer { ctc_free(der) }
        guard length > 0, let der else { throw Failure(description: "OpenSSL did not sign the certificate for \(subject)") }
        // Through an array, as the bytes came before: `Data(bytes:count:)` allocates its storage in a
        // frame .ci/lsan.supp does not name, and a fixture held in a static is then reported at exit.
        return Data(Array(UnsafeBufferPointer(start: der, count: length)))
    }
}
