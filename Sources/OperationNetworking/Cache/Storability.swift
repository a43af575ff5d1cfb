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
        guard request.usesCache, !request.control.has("no-store"), (200...599).contains(status), status != 206,
              status != 304, !redirectStatuses.contains(status) else { return false }
        let control = CacheControl(headers["cache-control"])
        if control.has("must-understand") {
            guard understoodStatuses.contains(status) else { return false }
        } else if control.has("no-store") {
            return false
        }
        if authenticated {
            guard control.has("public") || control.has("must-revalidate") || control.has("s-maxage") else { return false }
        }
        return control.has("max-age") || control.has("public") || control.has("private")
            || headers["expires"] != nil || Freshness.heuristicallyCacheableStatuses.contains(status)
    }

    /// The header fields a cache keeps of `fields` (by lowercased name, as the cache keeps them): without
    /// `neverStoredFields` and those `Connection` names (§3.1). The common response loses
    /// one or two: they are taken out of a copy rather than the rest put into a new dictionary.
    static func storedFields(of fields: [String: String]) -> [String: String] {
        var kept = fields
        for name in fields.keys where neverStoredFields.contains(name) { kept.removeValue(forKey: name) }
        if let connection = fields["connection"] {
            for member in CacheControl.listMembers(connection) { kept.removeValue(forKey: asciiLowercased(member)) }
        }
        return kept
    }

    /// Whether a body of `size` bytes fits the cache: as Apple's URL loading does, a response larger
    /// than about 5 % of the cache's capacity (the larger of memory and disk) is not stored, so one
    /// download cannot evict everything else. A cache without capacity stores nothing.
    static func fits(size: Int, memoryCapacity: Int, diskCapacity: Int) -> Bool {
        let capacity = max(memoryCapacity, diskCapacity)
        return capacity > 0 && size <= capacity / 20
    }
}
