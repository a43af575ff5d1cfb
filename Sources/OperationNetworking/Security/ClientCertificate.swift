import Foundation

/// A client certificate and its private key, offered to servers that ask for one (mutual TLS) — the
/// Linux counterpart of the identity `URLCredential` AFNetworking used on Apple platforms.
///
/// - Threading: an immutable value.
public struct ClientCertificate: Sendable, Equatable {
    /// How certificate and key bytes are encoded.
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

    /// A certificate and key from bytes.
    public init(certificate: Data, certificateFormat: Format, privateKey: Data, privateKeyFormat: Format,
                passphrase: String? = nil) {
        self.certificate = certificate
        self.certificateFormat = certificateFormat
        self.privateKey = privateKey
        self.privateKeyFormat = privateKeyFormat
        self.passphrase = passphrase
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
