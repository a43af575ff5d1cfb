import CCurl
import CTrust
import Foundation

/// A set of trust anchors ready for verification: an OpenSSL `X509_STORE` holding the system's CA
/// bundle (when asked) and added certificates. The system bundle is parsed once per process and its
/// certificates shared by every store; a store is built once per set of anchors and kept, so a new
/// TLS connection or a pin decision never parses the bundle again.
///
/// - Threading: immutable after creation; OpenSSL verifies against one store from many threads.
final class TrustStore: @unchecked Sendable {
    /// The `X509_STORE`, owned.
    let raw: UnsafeMutableRawPointer
    /// The added anchors as PEM, in byte order: the CA blob a transfer gives curl beside the store, made
    /// once with the store rather than encoded again for every request. Bytes in an array, not `Data`:
    /// LeakSanitizer cannot follow `Data`'s reference to its storage from a store kept for the process.
    let anchorsPEM: [UInt8]

    private init?(anchors: Set<Data>, includesSystem: Bool) {
        let bundle = includesSystem ? TrustStore.systemBundle.raw : nil
        let ordered = anchors.sorted { $0.lexicographicallyPrecedes($1) }
        let store = CertificateData.withPointers(ordered) { pointers, lengths in
            ctrust_store_new(bundle, pointers, lengths, ordered.count)
        }
        guard let store else { return nil }
        raw = store
        anchorsPEM = Array(CertificateData.pem(ordered).utf8)
    }

    deinit { ctrust_store_free(raw) }

    /// The store for `anchors` plus, when `includesSystem`, the system's CA bundle; `nil` when an
    /// anchor is not a certificate.
    static func store(anchors: Set<Data>, includesSystem: Bool) -> TrustStore? {
        let key = Key(anchors: anchors, includesSystem: includesSystem)
        if let cached = cache.withLock({ $0[key] }) { return cached }
        // Built outside the lock: two threads may build the same store once each; one is kept.
        guard let store = TrustStore(anchors: anchors, includesSystem: includesSystem) else { return nil }
        // Stores dropped from the cache are freed (into OpenSSL) after the lock is released.
        var dropped: [Key: TrustStore] = [:]
        let kept: TrustStore = cache.withLock { stores in
            if let cached = stores[key] { return cached }
            // Distinct anchor sets are few in a process; a bound keeps a pathological caller from
            // growing the cache without end (a dropped store lives on while a transfer holds it).
            if stores.count >= maximumCachedStores { swap(&stores, &dropped) }
            stores[key] = store
            return store
        }
        dropped.removeAll()
        return kept
    }

    /// How many certificates the system bundle holds (0 when libcurl names none or it cannot be read).
    static var systemCertificateCount: Int { ctrust_bundle_count(systemBundle.raw) }

    private struct Key: Hashable {
        let anchors: Set<Data>
        let includesSystem: Bool
    }

    private static let maximumCachedStores = 64
    private static let cache = Protected<[Key: TrustStore]>([:])

    /// The certificates of the CA bundle libcurl was built to use, parsed once; never freed (the
    /// process's stores share them).
    private static let systemBundle: Bundle = {
        guard let info = curl_version_info(CURLVERSION_ELEVENTH), let path = info.pointee.cainfo else { return Bundle(raw: nil) }
        return Bundle(raw: ctrust_bundle_load(path))
    }()

    /// The parsed bundle.
    /// - Threading: read-only once made (once per process, `systemBundle`); any thread shares it.
    private struct Bundle: @unchecked Sendable {
        let raw: UnsafeMutableRawPointer?
    }
}
