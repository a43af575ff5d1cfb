import CTrust
import Foundation
import Synchronization

/// How a `SecurityPolicy` pins the server. A pin counts only on the path from the server's leaf,
/// never because the server appended it (see `SecurityPolicy`'s rules).
/// - Threading: an immutable value.
public enum SSLPinningMode: UInt, Sendable {
    /// No pinning: the chain must verify against the system's trust store (and any added anchors).
    case none = 0
    /// A certificate on the verified path (or, under `allowInvalidCertificates`, on the leaf's chain
    /// of signatures) must carry the public key of a pinned certificate.
    case publicKey = 1
    /// The chain must verify with the pinned certificates as its only anchors.
    case certificate = 2
}

/// Decides whether a server's TLS certificate chain is trusted (AFNetworking's `AFSecurityPolicy`).
/// The decision is enforced before the first request byte is written: a refused server
/// never receives the request, and the operation fails with `URLError(.serverCertificateUntrusted)`.
///
/// Certificates are DER `Data`. Verification runs in the same OpenSSL that libcurl uses for TLS.
///
/// **The rules** (SECURITY.md states them as promises, each with its test):
/// - `.none`: the chain verifies against the system CA bundle plus `additionalTrustAnchors`, and the
///   leaf matches the host when `validatesDomainName`. `allowInvalidCertificates` skips both, except
///   that with `validatesDomainName` and no pinned certificate it refuses (AFN's guard).
/// - `.certificate`: the chain verifies with the pinned certificates as its only anchors (partial
///   chains: a pinned intermediate or leaf is an anchor), and the path verification built holds a
///   pinned certificate.
/// - `.publicKey`: the chain verifies against the system bundle, `additionalTrustAnchors` and the
///   pinned certificates, and a certificate on the path verification built carries a pinned key.
/// - Under `allowInvalidCertificates` the pinning modes do not ask for a valid chain (dates, issuer
///   trust, extensions), but the pin must still sign for the leaf: walking up from the leaf while each
///   certificate's signature verifies with the next presented certificate's key, a certificate on the
///   walk is pinned (or carries a pinned key), or a pinned certificate's key signed the walk's last
///   certificate. The host is still checked when `validatesDomainName`.
/// - A certificate the server appends that is not on that path never counts; an empty pinned set
///   refuses every server.
///
/// **Subclassing** (AFN apps' "remembering" policies, which accept a certificate the user approved
/// once): override `evaluateServerTrust(_:forDomain:)`. For an operation whose policy is an instance
/// of a subclass, the transport asks that method about every new TLS connection, with the chain the
/// server presented, before the request is sent; an instance of `SecurityPolicy` itself is decided
/// by the rules below without the call. `init(pinningMode:withPinnedCertificates:)` and
/// `init?(coder:)` are the designated initializers, both `required`; `init(pinningMode:)` is a
/// convenience initializer. A subclass whose own stored properties have initial values and that
/// declares no designated initializer inherits all three; one that declares a designated
/// initializer must also implement the two `required` ones (copies are made through the first,
/// archives decoded through the second). `copy()` of an operation or a manager copies its policy
/// (the operations a manager makes share its instance): a subclass with state of its own overrides
/// `copy(with:)` to carry it. Restate `@unchecked Sendable` and keep the subclass's state where only
/// a lock reaches it: one policy serves many operations, and the network thread calls it. Below, a
/// `Protected` value (a dozen lines of your own over `NSLock`, whose `withLock` is the only way to
/// the state: Migration.md, "Porting to Swift 6") holds the approved certificates; `Mutex` of Swift's
/// Synchronization module would do the same, but ThreadSanitizer misreads it on Linux.
/// ```swift
/// final class RememberingPolicy: SecurityPolicy, @unchecked Sendable {
///     private let approved = Protected<Set<Data>>([])
///
///     func approve(_ certificate: Data) { approved.withLock { _ = $0.insert(certificate) } }
///
///     override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool {
///         if super.evaluateServerTrust(chain, forDomain: domain) { return true }
///         guard let leaf = chain.first else { return false }
///         return approved.withLock { $0.contains(leaf) }
///     }
/// }
/// let policy = RememberingPolicy(pinningMode: .none)
/// ```
/// - Threading: the settings live behind an internal lock, which is never held while anything else
///   runs (no override, no other lock); one policy may serve many operations.
open class SecurityPolicy: NSObject, NSSecureCoding, NSCopying, @unchecked Sendable {
    /// This instance's number, never given to another in the process: connections a subclass
    /// instance accepted are kept under it (an address could be reused after the instance is freed).
    private let serialNumber = SecurityPolicy.serialNumbers.wrappingAdd(1, ordering: .relaxed).newValue
    private static let serialNumbers = Atomic<UInt64>(0)
    /// Every setting (the evaluator is never stored here: `snapshot` adds it).
    private let stored: Protected<Snapshot>

    /// A policy with `pinningMode` pinning the certificates among the resources of `Bundle.main`
    /// (its `.cer`, `.der`, `.crt` and `.pem` files: AFN's `defaultPinnedCertificates`). With none
    /// there, a pinning policy refuses every server, and the refusal's error says the pinned set is empty.
    public convenience init(pinningMode: SSLPinningMode) {
        let pinned = pinningMode == .none ? [] : SecurityPolicy.defaultPinnedCertificates(in: .main)
        self.init(pinningMode: pinningMode, withPinnedCertificates: pinned)
    }

    /// A policy with `pinningMode` and `pinnedCertificates` (DER). The designated initializer;
    /// subclasses keep it (copies are made through it).
    public required init(pinningMode: SSLPinningMode, withPinnedCertificates pinnedCertificates: Set<Data>) {
        stored = Protected(Snapshot(mode: pinningMode, pinned: pinnedCertificates, anchors: [], allowInvalid: false,
                                    validatesDomainName: true))
        super.init()
    }

    /// The certificates among `bundle`'s resources (AFN's `defaultPinnedCertificates` for the main
    /// bundle): on Linux, the `.cer`, `.der`, `.crt` and `.pem` files in its resource directory.
    static func defaultPinnedCertificates(in bundle: Bundle) -> Set<Data> {
        certificates(in: bundle.resourceURL ?? bundle.bundleURL)
    }

    /// Why a policy refused the server presenting `chain` for `domain`, for the refusal's error: a leaf
    /// for another host, or an empty pinned set (which refuses everything), is named as the cause.
    static func refusalReason(_ policy: Snapshot, chain: [Data], domain: String?) -> String {
        if let evaluator = policy.evaluator {
            return "\(type(of: evaluator.policy)).evaluateServerTrust(_:forDomain:) refused the server's certificate chain."
        }
        if policy.validatesDomainName, let domain, let leaf = chain.first, !CertificateData.matches(leaf, host: domain) {
            return "The server's certificate does not match the host \(domain): it was issued for other names."
        }
        guard policy.mode != .none, policy.pinned.isEmpty else {
            return "The server's certificate chain does not satisfy the pinning policy."
        }
        return "The pinning policy has no pinned certificates, so it refuses every server "
            + "(none were given and Bundle.main has no .cer, .der, .crt or .pem resource)."
    }

    /// No pinning, system trust, host name validated: a new instance each call.
    public static func `default`() -> SecurityPolicy {
        SecurityPolicy(pinningMode: .none)
    }

    /// The pinning mode, fixed at creation.
    public var sslPinningMode: SSLPinningMode { stored.withLock { $0.mode } }

    /// Pinned certificates as DER data. Default empty.
    public var pinnedCertificates: Set<Data> {
        get { stored.withLock { $0.pinned } }
        set { stored.withLock { $0.pinned = newValue } }
    }

    /// Extra trust anchors (DER) added to the system store, e.g. a private CA, without turning
    /// verification off. Default empty. (Not in AFNetworking: see Migration.md.)
    public var additionalTrustAnchors: Set<Data> {
        get { stored.withLock { $0.anchors } }
        set { stored.withLock { $0.anchors = newValue } }
    }

    /// Accept expired, not-yet-valid or untrusted chains. Default `false`. Never disables the pin match.
    public var allowInvalidCertificates: Bool {
        get { stored.withLock { $0.allowInvalid } }
        set { stored.withLock { $0.allowInvalid = newValue } }
    }

    /// Require the leaf to match the host. Default `true`.
    public var validatesDomainName: Bool {
        get { stored.withLock { $0.validatesDomainName } }
        set { stored.withLock { $0.validatesDomainName = newValue } }
    }

    /// Every certificate (DER) in the `.cer`, `.der`, `.crt` and `.pem` files of `directory`
    /// (PEM files may hold several). Unreadable files are skipped.
    public static func certificates(in directory: URL) -> Set<Data> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var result = Set<Data>()
        for name in names.sorted() {
            let ext = (name as NSString).pathExtension.lowercased()
            guard ["cer", "der", "crt", "pem"].contains(ext),
                  let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path) else {
                continue
            }
            let pem = CertificateData.fromPEM(data)
            if !pem.isEmpty {
                result.formUnion(pem)
            } else if CertificateData.isCertificate(data) {
                result.insert(data)
            }
        }
        return result
    }

    /// Whether `chain` (DER, leaf first) is trusted for `domain` under this policy's settings (see
    /// the type's rules). Callable from any thread.
    ///
    /// Override it in a subclass to decide trust yourself (AFN's operation asked its policy's
    /// `evaluateServerTrust:forDomain:` on every server-trust challenge): the transport then calls the
    /// override for every new TLS connection of an operation carrying the policy — on the library's
    /// network thread, after the handshake and before any request byte — with the certificates the
    /// server presented (leaf first) and the request's host. `false` fails the operation with
    /// `URLError(.serverCertificateUntrusted)` and the server receives nothing. The network thread
    /// drives every transfer of the process, so the override must answer quickly: decide from state
    /// at hand (certificates the user already approved), never wait for a user. A connection the
    /// override accepted is reused only by operations carrying the same instance; TLS sessions are
    /// not resumed for it, so every new connection presents its chain.
    open func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool {
        SecurityPolicy.evaluate(settings, chain: chain, domain: domain)
    }

    /// The decision for a snapshot of settings (the transport calls this too): see the rules in
    /// `evaluateServerTrust`, SECURITY.md and Migration.md, "Security".
    static func evaluate(_ policy: Snapshot, chain: [Data], domain: String?) -> Bool {
        guard let leaf = chain.first else { return false }
        // AFN's guard: a host name cannot be validated on a certificate nobody vouches for.
        if domain != nil && policy.allowInvalid && policy.validatesDomainName
            && (policy.mode == .none || policy.pinned.isEmpty) { return false }
        let host = policy.validatesDomainName ? domain : nil
        switch policy.mode {
        case .none:
            if policy.allowInvalid { return true }
            guard let store = TrustStore.store(anchors: policy.anchors, includesSystem: true) else { return false }
            return CertificateData.verifiedPath(chain, store: store, host: host) != nil
        case .certificate:
            let pinned = policy.pinned
            if policy.allowInvalid {
                return CertificateData.matches(leaf, host: host)
                    && PinnedPath.signaturesReachPin(chain, pinned: pinned, isPinned: pinned.contains)
            }
            // The pinned certificates are the only anchors, so the path verification builds ends in one.
            guard let store = TrustStore.store(anchors: pinned, includesSystem: false),
                  let path = CertificateData.verifiedPath(chain, store: store, host: host) else { return false }
            return path.contains(where: pinned.contains)
        case .publicKey:
            let pinnedKeys = Set(policy.pinned.compactMap(CertificateData.publicKey))
            let carriesPinnedKey = { (certificate: Data) in
                CertificateData.publicKey(certificate).map(pinnedKeys.contains) ?? false
            }
            if policy.allowInvalid {
                return CertificateData.matches(leaf, host: host)
                    && PinnedPath.signaturesReachPin(chain, pinned: policy.pinned, isPinned: carriesPinnedKey)
            }
            guard let store = TrustStore.store(anchors: policy.pinned.union(policy.anchors), includesSystem: true),
                  let path = CertificateData.verifiedPath(chain, store: store, host: host) else { return false }
            return path.contains(where: carriesPinnedKey)
        }
    }

    /// A copy sharing no mutable state with the original.
    open func copy(with zone: NSZone? = nil) -> Any {
        let settings = self.settings
        // The initializer may be a subclass's: it runs with no lock held.
        let copy = type(of: self).init(pinningMode: settings.mode, withPinnedCertificates: settings.pinned)
        copy.stored.withLock { $0 = settings }
        return copy
    }

    // MARK: - NSSecureCoding

    /// `true`: decoding checks every class.
    public class var supportsSecureCoding: Bool { true }

    /// Archives mode, pinned certificates, added anchors and both flags (certificates are public data).
    open func encode(with coder: NSCoder) {
        let policy = settings
        coder.encode(SerializationCodingVersion, forKey: CodingVersionKey)
        coder.encode(Int(policy.mode.rawValue), forKey: "SSLPinningMode")
        coder.encodeJSON(policy.pinned.map { $0.base64EncodedString() }.sorted(), forKey: "pinnedCertificates")
        coder.encodeJSON(policy.anchors.map { $0.base64EncodedString() }.sorted(), forKey: "additionalTrustAnchors")
        coder.encode(policy.allowInvalid, forKey: "allowInvalidCertificates")
        coder.encode(policy.validatesDomainName, forKey: "validatesDomainName")
    }

    /// Restores an archived policy; an unknown mode, or a setting that is not a number, fails the decoding.
    public required init?(coder: NSCoder) {
        coder.checkCodingVersion(of: SecurityPolicy.self)
        // A mode that is not a number is recorded by the checked decoder (SafeArchive throws it).
        let raw = coder.decodeCheckedInteger(forKey: "SSLPinningMode", of: SecurityPolicy.self) ?? 0
        guard let mode = SSLPinningMode(rawValue: UInt(max(0, raw))) else {
            coder.failInvalidValue(forKey: "SSLPinningMode", expected: "pinning mode")
            // Under SafeArchive the failure is thrown; a nil would only make corelibs print to stderr.
            guard ArchiveCheck.current != nil else { return nil }
            stored = Protected(SecurityPolicy.defaultSnapshot)
            super.init()
            return
        }
        stored = Protected(Snapshot(
            mode: mode,
            pinned: SecurityPolicy.decodeCertificates(coder, "pinnedCertificates"),
            anchors: SecurityPolicy.decodeCertificates(coder, "additionalTrustAnchors"),
            allowInvalid: coder.decodeCheckedBool(forKey: "allowInvalidCertificates", of: SecurityPolicy.self) ?? false,
            validatesDomainName: coder.decodeCheckedBool(forKey: "validatesDomainName", of: SecurityPolicy.self) ?? true))
        super.init()
    }

    private static func decodeCertificates(_ coder: NSCoder, _ key: String) -> Set<Data> {
        Set((coder.decodeJSON([String].self, forKey: key) ?? []).compactMap { Data(base64Encoded: $0) })
    }

    /// Equal when every setting is equal.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SecurityPolicy else { return false }
        // The same instance is equal even while another thread changes its settings between the two reads.
        return other === self || other.settings == settings
    }

    /// Consistent with `isEqual`.
    open override var hash: Int { settings.hashValue }

    /// The snapshot of `SecurityPolicy.default()`.
    static let defaultSnapshot = Snapshot(mode: .none, pinned: [], anchors: [], allowInvalid: false, validatesDomainName: true)

    /// A value snapshot for the transport (taken when a transfer starts): the settings, and this
    /// instance when it is a subclass's, whose `evaluateServerTrust` the transport then calls. An
    /// instance of the base class is decided from its settings alone (by `evaluate`, without the
    /// call), so the default policy costs the transport nothing beyond libcurl's own verification.
    var snapshot: Snapshot {
        var snapshot = settings
        if ObjectIdentifier(type(of: self)) != ObjectIdentifier(SecurityPolicy.self) {
            snapshot.evaluator = Evaluator(policy: self, serialNumber: serialNumber)
        }
        return snapshot
    }

    /// The settings alone (what equality, hashing and archives see).
    private var settings: Snapshot { stored.value }

    /// The settings of a policy at one moment; the transport decides from this.
    /// - Threading: a value; the policy keeps its own behind its lock (`stored`), and a transfer carries a
    ///   copy to the network thread.
    struct Snapshot: Sendable, Hashable {
        var mode: SSLPinningMode { didSet { describeForCache() } }
        var pinned: Set<Data> { didSet { describeForCache() } }
        var anchors: Set<Data> { didSet { describeForCache() } }
        var allowInvalid: Bool { didSet { describeForCache() } }
        var validatesDomainName: Bool { didSet { describeForCache() } }
        /// The subclass instance that decides trust itself; `nil` for `SecurityPolicy`'s own instances.
        var evaluator: Evaluator?
        /// The settings above as the HTTP cache records the trust a response was fetched under
        /// (`CacheTrust.describe`, certificates by their SHA-256): made when a setting changes, once,
        /// not by every request that consults the cache.
        private(set) var cacheDescription = ""

        init(mode: SSLPinningMode, pinned: Set<Data>, anchors: Set<Data>, allowInvalid: Bool, validatesDomainName: Bool,
             evaluator: Evaluator? = nil) {
            self.mode = mode
            self.pinned = pinned
            self.anchors = anchors
            self.allowInvalid = allowInvalid
            self.validatesDomainName = validatesDomainName
            self.evaluator = evaluator
            describeForCache()
        }

        private mutating func describeForCache() {
            cacheDescription = CacheTrust.describe(self)
        }

        /// True for the plain default: system trust, host checked, nothing added, no override.
        var isSystemDefault: Bool {
            evaluator == nil && mode == .none && anchors.isEmpty && !allowInvalid && validatesDomainName
        }
    }

    /// A subclass instance whose `evaluateServerTrust` decides; equal only to itself (by its serial
    /// number, which no other instance of the process gets).
    /// - Threading: immutable; the transport calls `policy.evaluateServerTrust` on the network thread.
    struct Evaluator: Sendable, Hashable {
        let policy: SecurityPolicy
        let serialNumber: UInt64

        static func == (lhs: Evaluator, rhs: Evaluator) -> Bool { lhs.serialNumber == rhs.serialNumber }
        func hash(into hasher: inout Hasher) { hasher.combine(serialNumber) }
    }
}
