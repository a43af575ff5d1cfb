import CTrust
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Whether a response may be stored (RFC 9111 §3) and what of it is stored (§3.1).
enum Storability {
    /// The statuses RFC 9110 §15 defines, whose caching rules the library follows: `must-understand`
    /// stores only these (§5.2.2.3).
    static let understoodStatuses = Set(200...206).union(300...305).union([307, 308]).union(400...417)
        .union([421, 422, 426]).union(500...505)

    /// Redirects are never stored: delivered, they were refused by the redirect block, which a stored
    /// copy would skip next time. (Nor is a redirect's target stored under the original request; see
    /// `CacheState`.)
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The fields (by lowercased name) never stored: those that belong to one connection or one hop
    /// (§3.1), and the cookies a response sets — secrets, already in the cookie storage when the
    /// operation handles cookies, which a stored response answering later must not set again.
    static let neverStoredFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authentication-info", "proxy-authorization", "set-cookie", "set-cookie2"]

    /// Whether a private cache may store the response to `request` with `status` and `headers` (§3):
    /// a final, whole response to a GET, neither request nor response saying `no-store` (unless
    /// `must-understand` on a status understood, §5.2.2.3), not a partial, 304 or redirect; with
    /// credentials on the request only when the response says `public`, `must-revalidate` or
    /// `s-maxage` (§3.5); and with explicit freshness, `public`, `private` or a status cacheable by
    /// default. `headers`: the response's fields by lowercased name.
    static func mayStore(request: CacheRequest, status: Int, headers: [String: String], authenticated: Bool) -> Bool {
        mayStore(request: request, status: status, control: CacheControl(headers["cache-control"]),
                 hasExpires: { headers["expires"] != nil }, authenticated: authenticated)
    }

    /// `mayStore(request:status:headers:authenticated:)` for a response whose `Cache-Control` is
    /// `control`; `hasExpires` tells whether it has an `Expires` field, asked only when nothing else
    /// decided.
    static func mayStore(request: CacheRequest, status: Int, control: CacheControl, hasExpires: () -> Bool,
                         authenticated: Bool) -> Bool {
        guard request.usesCache, !request.control.has("no-store"), (200...599).contains(status), status != 206,
              status != 304, !redirectStatuses.contains(status) else { return false }
        if control.has("must-understand") {
            guard understoodStatuses.contains(status) else { return false }
        } else if control.has("no-store") {
            return false
        }
        if authenticated {
            guard control.has("public") || control.has("must-revalidate") || control.has("s-maxage") else { return false }
        }
        return control.has("max-age") || control.has("public") || control.has("private")
            || Freshness.heuristicallyCacheableStatuses.contains(status) || hasExpires()
    }

    /// The header fields a cache keeps of `head` (by lowercased name, as the cache keeps them): without
    /// `neverStoredFields` and those `Connection` names (§3.1), the first left out as the dictionary is
    /// made from the head's bytes.
    static func storedFields(of head: ResponseHead) -> [String: String] {
        var (kept, connection) = head.lowercasedFields(skipping: neverStoredFields)
        if let connection {
            for member in CacheControl.listMembers(connection) { kept.removeValue(forKey: asciiLowercased(member)) }
        }
        return kept
    }

    /// `storedFields(of:)` for fields already in a dictionary by lowercased name (a `304`'s): the common
    /// response loses one or two, taken out of a copy.
    static func storedFields(of fields: [String: String]) -> [String: String] {
        var kept = fields
        for name in fields.keys where neverStoredFields.contains(name) { kept.removeValue(forKey: name) }
        if let connection = fields["connection"] {
            for member in CacheControl.listMembers(connection) { kept.removeValue(forKey: asciiLowercased(member)) }
        }
        return kept
    }
}

/// The trust an https response was fetched under, as the cache records it with the entry: a stored
/// response answers only an operation that would have trusted the connection it came from.
///
/// Without it, an operation without pinning (or a run of the program before pinning was added) could
/// store a response from a server holding a mis-issued certificate, and a pinned operation would later
/// be answered from the cache with its pin never evaluated. So every entry of an `https` URL records
/// an identity of everything that decided the connection's trust, and a lookup finds the entry only
/// when the operation's identity is the same; otherwise the operation goes to the network (its pin is
/// evaluated there) and its response may replace the entry.
///
/// The identity is a text, the same in every process for the same settings:
/// - `system` for the default: `SecurityPolicy.default()`'s settings and no client certificate;
/// - otherwise the pinning mode, `allowInvalidCertificates`, `validatesDomainName`, and SHA-256
///   digests of the pinned certificates, the added anchors and the client certificate (certificates
///   are public; no key or passphrase is part of it);
/// - a subclass that decides trust itself (`evaluateServerTrust(_:forDomain:)` overridden) adds the
///   instance's number and a random number of this process: its decision is code, which no record
///   can repeat, so its entries answer that instance alone, in this process alone.
///
/// An entry stored with no identity (by the app itself, or by corelibs' `URLSession`, which trusts
/// the system's roots) answers only the default identity.
/// - Threading: pure functions; any thread.
enum CacheTrust {
    /// The identity of the default trust.
    static let system = "system"

    /// The identity of `policy` (`nil`: the default policy) with `clientCertificate`.
    /// Made from what the policy and the certificate described once, when they were set
    /// (`SecurityPolicy.Snapshot.cacheDescription`, `ClientCertificate.cacheDigest`): every request that
    /// consults the cache asks, and hashing certificates for each one cost more than its fetch.
    static func identity(of policy: SecurityPolicy.Snapshot?, clientCertificate: ClientCertificate?) -> String {
        guard policy.map({ !$0.isSystemDefault }) ?? false || clientCertificate != nil else { return system }
        let settings = policy ?? SecurityPolicy.defaultSnapshot
        var identity = settings.cacheDescription + ";client=" + (clientCertificate?.cacheDigest ?? "none")
        if let evaluator = settings.evaluator {
            identity += ";evaluator=\(processNumber).\(evaluator.serialNumber)"
        }
        return identity
    }

    /// The part of an identity that `settings` give (the evaluator aside).
    static func describe(_ settings: SecurityPolicy.Snapshot) -> String {
        ["mode=\(settings.mode.rawValue)", "allowInvalid=\(settings.allowInvalid)",
         "validatesDomainName=\(settings.validatesDomainName)", "pinned=\(digest(of: settings.pinned))",
         "anchors=\(digest(of: settings.anchors))"].joined(separator: ";")
    }

    /// Whether an entry stored under `recorded` (its identity, `nil` when it has none) may answer an
    /// operation whose identity is `current`, for the entry's URL `url`: always for a URL that is not
    /// `https` (no connection trust protected it), else only under the same identity.
    static func admits(recorded: String?, current: String, for url: URL) -> Bool {
        guard isHTTPS(url) else { return true }
        return (recorded ?? system) == current
    }

    /// The identity an entry records for a response to `url` fetched under `current`: `nil` for a URL
    /// that is not `https`.
    static func recorded(_ current: String, for url: URL) -> String? {
        isHTTPS(url) ? current : nil
    }

    /// Whether `url`'s scheme is `https`, in any case.
    private static func isHTTPS(_ url: URL) -> Bool {
        url.scheme.map { asciiCaseInsensitiveEquals($0, "https") } ?? false
    }

    /// A random number drawn once per process, so that an overriding instance's number never matches
    /// an entry another process stored.
    private static let processNumber = UInt64.random(in: 1...UInt64.max)

    /// SHA-256, in hex, of a set of certificates taken in a fixed order (the set's own order varies).
    static func digest(of certificates: Set<Data>) -> String {
        guard !certificates.isEmpty else { return "none" }
        var joined = Data()
        for certificate in certificates.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            // Each one framed by its length, so two sets never join into the same bytes.
            withUnsafeBytes(of: UInt64(certificate.count).bigEndian) { joined.append(contentsOf: $0) }
            joined.append(certificate)
        }
        var hash = [UInt8](repeating: 0, count: 32)
        let ok = joined.withUnsafeBytes { bytes in
            ctrust_sha256(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, &hash)
        }
        // Without a digest the identity must still differ from every other: the certificates themselves.
        guard ok == 1 else { return joined.base64EncodedString() }
        return hash.map { String(format: "%02x", $0) }.joined()
    }
}
