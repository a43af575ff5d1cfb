import CTrust
import Foundation

/// X.509 helpers over DER `Data`, calling OpenSSL through the `CTrust` shim.
///
/// - Threading: stateless; any thread.
enum CertificateData {
    /// Verifies `chain` (leaf first); 0 when it verifies, else an OpenSSL `X509_V_ERR_*` code or -1.
    static func verify(_ chain: [Data], anchors: [Data], useSystemStore: Bool, host: String?) -> Int32 {
        withPointers(chain) { chainPointers, chainLengths in
            withPointers(anchors) { anchorPointers, anchorLengths in
                ctrust_verify_chain(chainPointers, chainLengths, chain.count, anchorPointers, anchorLengths,
                                    anchors.count, useSystemStore ? 1 : 0, host)
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

    private static func withPointers<R>(_ items: [Data],
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
