import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `CacheStorage` keeps in an entry's `userInfo` beside the response: the URL it was stored for,
/// RFC 9111's request and response times and secondary-key fields, and the trust it was fetched under.
///
/// It is one JSON value in a `Data` under `userInfoKey`. corelibs' disk cache archives `userInfo` and
/// reads it back in a new process (a `Data` among its values survives), and JSON is read by Swift code
/// that throws on damage, where CoreFoundation's property-list parser can crash on a damaged binary list
/// (see `BinaryPropertyListScanner`).
/// - Threading: a value; pure.
struct CacheEntryMetadata: Codable, Equatable {
    /// The `userInfo` key of the metadata.
    static let userInfoKey = "org.operationnetworking.cache.metadata"
    /// The layout this version writes; an entry with another is read as damaged and replaced.
    static let currentVersion = 2

    var version = currentVersion
    /// The URL the entry was stored for, as `key(for:)` writes it.
    var requestURL: String
    /// The request header fields the response's `Vary` names (names lowercased), as sent.
    var varyingRequestHeaders: [String: String]
    var requestTime: Date
    var responseTime: Date
    /// The trust identity of the connection that fetched it (`CacheTrust`), for an `https` URL.
    var trust: String?

    init(requestURL: String, varyingRequestHeaders: [String: String], requestTime: Date, responseTime: Date,
         trust: String? = nil) {
        self.requestURL = requestURL
        self.trust = trust
        // Lowercased here too, so two spellings of one name cannot both be kept.
        self.varyingRequestHeaders = Dictionary(varyingRequestHeaders.map { ($0.key.lowercased(), $0.value) },
                                                uniquingKeysWith: { first, _ in first })
        self.requestTime = requestTime
        self.responseTime = responseTime
    }

    /// What an entry's `userInfo` holds.
    enum Reading {
        case found(CacheEntryMetadata)
        /// No metadata: stored by someone else (the app, or a library version before this one).
        case absent
        /// Metadata that cannot be read, or of another version.
        case damaged
    }

    /// The metadata in `userInfo`.
    static func read(from userInfo: [AnyHashable: Any]?) -> Reading {
        guard let value = userInfo?[userInfoKey] else { return .absent }
        guard let data = value as? Data,
              let metadata = try? JSONDecoder().decode(CacheEntryMetadata.self, from: data),
              metadata.version == currentVersion else {
            return .damaged
        }
        return .found(metadata)
    }

    /// The `userInfo` that carries this metadata.
    func userInfo() throws -> [AnyHashable: Any] {
        [Self.userInfoKey: try encodedJSON()]
    }

    /// The metadata of an entry stored without any, for a response of `url`: stored for that URL,
    /// no secondary key, and request and response times in the distant past, so that RFC 9111 finds it
    /// stale (revalidated or fetched again), while a policy that takes any stored response still can.
    static func foreign(_ url: URL) -> CacheEntryMetadata {
        CacheEntryMetadata(requestURL: key(for: url), varyingRequestHeaders: [:],
                           requestTime: .distantPast, responseTime: .distantPast)
    }

    /// `url` as an entry records it: without its fragment (never sent, not part of RFC 9111's key), with
    /// its scheme and host lowercased (they are case-insensitive), and without its user name and
    /// password: a credential is never written into the cache (a request that carries one in its URL
    /// counts as a request with credentials, see `CacheRequest.hasAuthorization`). A URL whose
    /// components cannot be read is kept as written when it shows no user information, and otherwise
    /// as the empty key, under which `CacheStorage` neither looks up nor stores anything.
    static func key(for url: URL) -> String {
        // Most URLs are written so already: kept as they are, without taking them apart and putting them
        // together again (URLComponents costs more than the rest of a lookup).
        let text = url.absoluteString
        if isKeyForm(url: text) { return text }
        if url.user == nil, url.password == nil, url.fragment == nil, let scheme = url.scheme, let host = url.host,
           isKeyForm(scheme), isKeyForm(host) {
            return text
        }
        let asWritten = url.user == nil && url.password == nil ? url.absoluteString : ""
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return asWritten }
        components.percentEncodedUser = nil
        components.percentEncodedPassword = nil
        components.fragment = nil
        components.scheme = components.scheme?.lowercased()
        components.percentEncodedHost = components.percentEncodedHost?.lowercased()
        return components.string ?? asWritten
    }

    /// Whether `text`, a URL's absolute string, is already its key, read from its bytes without taking
    /// the URL apart: `scheme://authority…` with no uppercase letter or percent escape in the scheme and
    /// the authority, no user information (`@`) there, and no fragment (`#`). Anything else (false) is
    /// decided from the URL's parts.
    private static func isKeyForm(url text: String) -> Bool {
        var text = text
        return text.withUTF8(isKeyForm(url:))
    }

    private static func isKeyForm(url text: UnsafeBufferPointer<UInt8>) -> Bool {
        var sawScheme = false, inAuthority = false, slashes = 0, authority = 0
        for byte in text {
            if byte == 0x23 { return false }   // '#': a fragment
            if !sawScheme {
                if byte == 0x3A { sawScheme = true; continue }   // ':'
                if (0x41...0x5A).contains(byte) || byte == 0x25 { return false }
            } else if !inAuthority {
                guard byte == 0x2F else { return false }   // "://" is required
                slashes += 1
                if slashes == 2 { inAuthority = true }
            } else if byte == 0x2F || byte == 0x3F {   // '/' or '?': the authority ends
                return authority > 0 && !text.contains(0x23)
            } else if (0x41...0x5A).contains(byte) || byte == 0x25 || byte == 0x40 {   // A-Z, '%', '@'
                return false
            } else {
                authority += 1
            }
        }
        return authority > 0
    }

    /// Whether a scheme or host is already as a key writes it: no uppercase letter, no percent escape.
    private static func isKeyForm(_ text: String) -> Bool {
        for byte in text.utf8 where (0x41...0x5A).contains(byte) || byte == 0x25 { return false }
        return true
    }
}
