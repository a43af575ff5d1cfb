import Foundation

/// A client certificate and its private key, offered to servers that ask for one (mutual TLS) — the
/// Linux counterpart of the identity `URLCredential` AFNetworking used on Apple platforms.
///
/// Its `description`, `debugDescription` and mirror (what `print`, `String(describing:)`,
/// `String(reflecting:)` and `dump` show) name the formats and sizes only: never the passphrase nor
/// the key's bytes. It is never archived.
///
/// - Threading: an immutable value.
public struct ClientCertificate: Sendable, Equatable {
    /// How certificate and key bytes are encoded.
    /// - Threading: an immutable value.
    public enum Format: String, Sendable {
        /// Base64 text between `-----BEGIN …-----` lines.
        case pem = "PEM"
        /// Binary ASN.1.
        case der = "DER"
    }

    /// The certificate (optionally followed by intermediates, in PEM).
    public let certificate: Data
    /// How `certificate` is encoded.
    public let certificateFormat: Format
    /// The private key; PEM may be encrypted, then `passphrase` unlocks it.
    public let privateKey: Data
    /// How `privateKey` is encoded.
    public let privateKeyFormat: Format
    /// Unlocks an encrypted PEM key; `nil` for a key that is not encrypted.
    public let passphrase: String?
    /// The certificate's SHA-256 as the HTTP cache records the trust a response was fetched under
    /// (`CacheTrust.identity`): made once, with the value.
    let cacheDigest: String

    /// A certificate and key from bytes.
    public init(certificate: Data, certificateFormat: Format, privateKey: Data, privateKeyFormat: Format,
                passphrase: String? = nil) {
        self.certificate = certificate
        self.certificateFormat = certificateFormat
        self.privateKey = privateKey
        self.privateKeyFormat = privateKeyFormat
        self.passphrase = passphrase
        cacheDigest = CacheTrust.digest(of: [certificate])
    }

    /// A certificate and key read from files; PEM or DER is told from the content.
    /// Throws the file system's error when a file cannot be read.
    public init(certificateFile: URL, privateKeyFile: URL, passphrase: String? = nil) throws {
        let certificate = try Data(contentsOf: certificateFile)
        let key = try Data(contentsOf: privateKeyFile)
        self.init(certificate: certificate, certificateFormat: ClientCertificate.format(of: certificate),
                  privateKey: key, privateKeyFormat: ClientCertificate.format(of: key), passphrase: passphrase)
    }

    private static func format(of data: Data) -> Format {
        data.prefix(64).range(of: Data("-----BEGIN".utf8)) != nil ? .pem : .der
    }
}

extension ClientCertificate: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The formats and sizes, with whether a passphrase is set, as `***`: never the secret itself.
    public var description: String {
        "ClientCertificate(certificate: \(certificate.count) bytes \(certificateFormat.rawValue), "
            + "privateKey: \(privateKey.count) bytes \(privateKeyFormat.rawValue), passphrase: \(shownPassphrase))"
    }

    /// The same as `description`.
    public var debugDescription: String { description }

    /// What `dump` shows: formats and sizes; the key and the passphrase as `***`.
    public var customMirror: Mirror {
        Mirror(self, children: [
            "certificate": "\(certificate.count) bytes",
            "certificateFormat": certificateFormat,
            "privateKey": "\(privateKey.count) bytes (\(URLRedaction.placeholder))",
            "privateKeyFormat": privateKeyFormat,
            "passphrase": shownPassphrase,
        ], displayStyle: .struct)
    }

    /// `***` when there is a passphrase, `nil` otherwise.
    private var shownPassphrase: String { passphrase == nil ? "nil" : URLRedaction.placeholder }
}
