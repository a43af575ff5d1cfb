import CTrust
import Foundation

/// X.509 helpers over DER `Data`, calling OpenSSL through the `CTrust` shim.
///
/// - Threading: stateless; any thread.
enum CertificateData {
    /// The certification path (leaf first, anchor last) that OpenSSL builds from `chain` (leaf first;
    /// the rest are only candidates) to an anchor of `store`, with `host` matched when not nil; `nil`
    /// when the chain does not verify. Only this path counts for a pin: a certificate the server
    /// merely appends is in it only when verification used it.
    static func verifiedPath(_ chain: [Data], store: TrustStore, host: String?) -> [Data]? {
        var path = ctrust_path()
        let result = withPointers(chain) { pointers, lengths in
            ctrust_verify_chain(store.raw, pointers, lengths, chain.count, host, &path)
        }
        defer { ctrust_path_free(&path) }
        guard result == 0, let bytes = path.bytes, let lengths = path.lengths else { return nil }
        var certificates: [Data] = []
        var offset = 0
        for index in 0..<path.count {
            let length = lengths[index]
            certificates.append(Data(bytes: bytes + offset, count: length))
            offset += length
        }
        return certificates
    }

    /// Whether `certificate`'s signature verifies with the public key of `issuer` (both DER). Names,
    /// validity and extensions are not looked at.
    static func isSigned(_ certificate: Data, by issuer: Data) -> Bool {
        certificate.withUnsafeBytes { subject in
            issuer.withUnsafeBytes { signer in
                ctrust_is_signed_by(subject.baseAddress?.assumingMemoryBound(to: UInt8.self), subject.count,
                                    signer.baseAddress?.assumingMemoryBound(to: UInt8.self), signer.count) == 1
            }
        }
    }

    /// Whether `certificate` matches `host`; `true` when `host` is nil (no host check asked).
    static func matches(_ certificate: Data, host: String?) -> Bool {
        guard let host else { return true }
        return certificate.withUnsafeBytes { bytes in
            ctrust_matches_host(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, host) == 1
        }
    }

    /// The DER SubjectPublicKeyInfo of `certificate`, or nil when it does not parse.
    static func publicKey(_ certificate: Data) -> Data? {
        certificate.withUnsafeBytes { bytes -> Data? in
            var out: UnsafeMutablePointer<UInt8>?
            let length = ctrust_public_key(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &out)
            defer { ctrust_free(out) }
            guard length > 0, let out else { return nil }
            return Data(bytes: out, count: length)
        }
    }

    /// Whether `data` is one DER certificate.
    static func isCertificate(_ data: Data) -> Bool {
        publicKey(data) != nil
    }

    /// Every certificate in a PEM text, as DER.
    static func fromPEM(_ pem: Data) -> [Data] {
        var result: [Data] = []
        pem.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self) else { return }
            var offset = 0
            while true {
                var out: UnsafeMutablePointer<UInt8>?
                let length = ctrust_next_pem_certificate(base, bytes.count, &offset, &out)
                defer { ctrust_free(out) }
                guard length > 0, let out else { break }
                result.append(Data(bytes: out, count: length))
            }
        }
        return result
    }

    /// PEM text for DER certificates (for curl's CA blob).
    static func pem(_ certificates: [Data]) -> String {
        certificates.map { der in
            let base64 = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            return "-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n"
        }.joined()
    }

    static func withPointers<R>(_ items: [Data],
                                        _ body: (UnsafePointer<UnsafePointer<UInt8>?>?, UnsafePointer<Int>?) -> R) -> R {
        let buffers = items.map { data -> UnsafeMutableBufferPointer<UInt8> in
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(data.count, 1))
            _ = buffer.initialize(from: data)
            return buffer
        }
        defer { buffers.forEach { $0.deallocate() } }
        let pointers: [UnsafePointer<UInt8>?] = buffers.map { UnsafePointer($0.baseAddress) }
        let lengths = items.map(\.count)
        return pointers.withUnsafeBufferPointer { p in
            lengths.withUnsafeBufferPointer { l in body(p.baseAddress, l.baseAddress) }
        }
    }
}
