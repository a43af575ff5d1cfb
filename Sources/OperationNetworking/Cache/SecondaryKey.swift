import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The secondary cache key of RFC 9111 §4.1: the request fields a response's `Vary` names, recorded
/// with the response and compared with a later request's, normalised as §4.1 allows.
///
/// A stored response also records here whether it answered a request with credentials
/// (`authenticatedMarker`, never the credential itself): such a response reaches another request
/// only after the origin validated that request's own credentials (see `CacheState`).
enum SecondaryKey {
    /// The key under which a stored response notes that it answered a request with credentials. Its
    /// value is empty: no credential is ever written into the cache.
    static let authenticatedMarker = "authorization"

    /// Fields whose values are secrets: a response that varies on one is not stored, since recording
    /// its secondary key would write the secret to disk.
    static let secretFields: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// Fields whose values compare without case (their syntax says so: tokens, media ranges,
    /// language tags).
    static let caseInsensitiveFields: Set<String> = ["accept", "accept-charset", "accept-encoding", "accept-language"]

    /// The lowercased field names `Vary` lists; `nil` for `Vary: *`, which no request matches (§4.1).
    static func varyingNames(_ vary: String?) -> [String]? {
        let names = CacheControl.listMembers(vary ?? "").map(asciiLowercased)
        return names.contains("*") ? nil : names
    }

    /// The fields of `request` that `vary` names, as sent; `nil` when the response cannot be stored
    /// under a secondary key (`Vary: *`, or a secret field).
    static func record(vary: String?, request: CacheRequest, authenticated: Bool) -> [String: String]? {
        if vary == nil { return authenticated ? [authenticatedMarker: ""] : [:] }
        guard let names = varyingNames(vary), !names.contains(where: secretFields.contains) else { return nil }
        var recorded: [String: String] = [:]
        for name in names {
            if let value = request.header(name) { recorded[name] = value }
        }
        if authenticated { recorded[authenticatedMarker] = "" }
        return recorded
    }

    /// Whether `stored` may answer `request` as far as `Vary` goes (§4.1): every named field absent
    /// from both, or present in both with values equal once normalised.
    static func matches(_ stored: StoredResponse, _ request: CacheRequest) -> Bool {
        guard let vary = stored.fields["vary"] else { return true }   // most responses: nothing to compare
        guard let names = varyingNames(vary) else { return false }
        for name in names where !secretFields.contains(name) {
            let before = stored.varyingRequestHeaders[name].map { normalised(name, $0) }
            let now = request.header(name).map { normalised(name, $0) }
            if before != now { return false }
        }
        return true
    }

    /// Whether `stored` answered a request with credentials.
    static func isAuthenticated(_ stored: StoredResponse) -> Bool {
        stored.varyingRequestHeaders[authenticatedMarker] != nil
    }

    /// A field value with the differences §4.1 ignores taken out: whitespace around list members,
    /// parameters and `=`, runs of whitespace, and case where the field's syntax ignores it.
    /// Members keep their order (a preference list's order can matter).
    static func normalised(_ name: String, _ value: String) -> String {
        let members = CacheControl.listMembers(value).map { member -> String in
            let parameters = member.split(separator: ";", omittingEmptySubsequences: false).map { parameter in
                parameter.split(separator: "=", omittingEmptySubsequences: false)
                    .map { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ") }
                    .joined(separator: "=")
            }
            return parameters.joined(separator: ";")
        }
        let joined = members.joined(separator: ",")
        return caseInsensitiveFields.contains(name) ? joined.lowercased() : joined
    }
}
