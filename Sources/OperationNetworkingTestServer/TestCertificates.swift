import Crypto
import Foundation
import SwiftASN1
import X509

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
}

/// A certificate authority made in memory for tests: issues server and client certificates with
/// chosen names and validity (expired, not yet valid, wrong host, …).
///
/// - Threading: immutable; any thread.
public struct TestCertificateAuthority: Sendable {
    /// The CA's own identity.
    public let identity: TestIdentity
    /// The CA's private key, raw (Crypto's key type is not `Sendable`).
    private let keyData: Data
    private let name: DistinguishedName
    /// What a server presents above its leaf when this CA issued it: this CA and its issuers below the root.
    private let presentedIssuers: [Data]

    /// A new self-signed root CA named `commonName`.
    public init(commonName: String) throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName(commonName) }
        let certificate = try TestCertificateAuthority.sign(subject: name, key: key.publicKey, issuer: name,
                                                            issuerKey: key, isAuthority: true, names: [])
        self.init(key: key, name: name, identity: TestIdentity(certificate: certificate, intermediates: [],
                                                               privateKeyPEM: key.pemRepresentation),
                  presentedIssuers: [])
    }

    private init(key: P256.Signing.PrivateKey, name: DistinguishedName, identity: TestIdentity, presentedIssuers: [Data]) {
        self.keyData = key.rawRepresentation
        self.name = name
        self.identity = identity
        self.presentedIssuers = presentedIssuers
    }

    /// The CA certificate, DER.
    public var certificate: Data { identity.certificate }

    private var key: P256.Signing.PrivateKey {
        get throws { try P256.Signing.PrivateKey(rawRepresentation: keyData) }
    }

    /// A subordinate CA signed by this one.
    public func intermediate(commonName: String) throws -> TestCertificateAuthority {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(commonName) }
        let certificate = try TestCertificateAuthority.sign(subject: subject, key: key.publicKey, issuer: name,
                                                            issuerKey: try self.key, isAuthority: true, names: [])
        return TestCertificateAuthority(
            key: key, name: subject,
            identity: TestIdentity(certificate: certificate, intermediates: presentedIssuers,
                                   privateKeyPEM: key.pemRepresentation),
            presentedIssuers: [certificate] + presentedIssuers)
    }

    /// Issues a leaf for `dnsNames` and `ipAddresses` (IPv4 literals), valid over the given window.
    public func issue(commonName: String = "localhost", dnsNames: [String] = ["localhost"],
                      ipAddresses: [String] = ["127.0.0.1"], notValidBefore: Date = Date().addingTimeInterval(-3600),
                      notValidAfter: Date = Date().addingTimeInterval(86400)) throws -> TestIdentity {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(commonName) }
        let certificate = try TestCertificateAuthority.sign(
            subject: subject, key: key.publicKey, issuer: name, issuerKey: try self.key, isAuthority: false,
            names: TestCertificateAuthority.generalNames(dnsNames, ipAddresses),
            notValidBefore: notValidBefore, notValidAfter: notValidAfter)
        return TestIdentity(certificate: certificate, intermediates: presentedIssuers,
                            privateKeyPEM: key.pemRepresentation)
    }

    /// A self-signed leaf for `dnsNames` and `ipAddresses`: no CA vouches for it.
    public static func selfSigned(dnsNames: [String] = ["localhost"],
                                  ipAddresses: [String] = ["127.0.0.1"]) throws -> TestIdentity {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("self-signed") }
        let certificate = try sign(subject: name, key: key.publicKey, issuer: name, issuerKey: key, isAuthority: false,
                                   names: generalNames(dnsNames, ipAddresses))
        return TestIdentity(certificate: certificate, intermediates: [], privateKeyPEM: key.pemRepresentation)
    }

    private static func generalNames(_ dnsNames: [String], _ ipAddresses: [String]) -> [GeneralName] {
        var names: [GeneralName] = dnsNames.map { .dnsName($0) }
        for address in ipAddresses {
            let bytes = address.split(separator: ".").compactMap { UInt8($0) }
            if bytes.count == 4 { names.append(.ipAddress(ASN1OctetString(contentBytes: ArraySlice(bytes)))) }
        }
        return names
    }

    private static func sign(subject: DistinguishedName, key: P256.Signing.PublicKey, issuer: DistinguishedName,
                             issuerKey: P256.Signing.PrivateKey, isAuthority: Bool, names: [GeneralName],
                             notValidBefore: Date = Date().addingTimeInterval(-3600),
                             notValidAfter: Date = Date().addingTimeInterval(86400 * 30)) throws -> Data {
        let extensions: Certificate.Extensions
        if isAuthority {
            extensions = try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }
        } else {
            extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth, .clientAuth])
                SubjectAlternativeNames(names)
            }
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key), notValidBefore: notValidBefore,
            notValidAfter: notValidAfter, issuer: issuer, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions, issuerPrivateKey: .init(issuerKey))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes)
    }
}
