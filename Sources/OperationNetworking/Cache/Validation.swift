import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Validating a stored response with its origin (RFC 9111 §4.3); `CacheInvalidation` drops what an
/// unsafe request changed (§4.4).
enum Validation {
    /// Fields a `304` never changes in a stored response (§3.2): its length and the encoding and range
    /// of the body the cache kept (the library keeps the body decoded), besides hop-by-hop fields.
    static let fieldsKeptOn304: Set<String> = ["content-length", "content-encoding", "content-range"]

    /// The fields a `304` may bring without changing the stored response it validates: `Date`, those
    /// `fieldsKeptOn304`, and those never stored (`Storability.neverStoredFields`). A list: a field of the
    /// `304` is compared with each name in place, by length first (`ResponseHead.hasSameValues`).
    static let fieldsNotComparedOn304 = ["date"] + fieldsKeptOn304.sorted() + Storability.neverStoredFields.sorted()

    /// Whether `stored` carries a validator (`ETag` or `Last-Modified`) to revalidate it with.
    static func hasValidator(_ stored: StoredResponse) -> Bool {
        stored.fields["etag"] != nil || stored.fields["last-modified"] != nil
    }

    /// The fields that make a request conditional on `stored` (§4.3.1): `If-None-Match` with its entity
    /// tag, strong or weak, and `If-Modified-Since` with its `Last-Modified` (an origin that knows
    /// entity tags ignores the date, RFC 9110 §13.1.3). Names as sent on the wire.
    /// In that order, as a list: a request asks for them on every revalidation, and a dictionary's hashing
    /// would cost more than the rest of making them.
    static func conditionalFields(for stored: StoredResponse) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        if let tag = stored.fields["etag"] { fields.append(("If-None-Match", tag)) }
        if let modified = stored.fields["last-modified"] { fields.append(("If-Modified-Since", modified)) }
        return fields
    }

    /// Whether a `304` with `headers` is about `stored` (§4.3.4): its strong entity tag equals the
    /// stored one, or its weak one matches weakly, or, without an entity tag, its `Last-Modified` is
    /// the stored one; a `304` without validators is about the one response the request asked about.
    /// `headers`: the `304`'s fields by lowercased name.
    static func notModified(_ headers: [String: String], isAbout stored: StoredResponse) -> Bool {
        notModified(field: { headers[$0] }, isAbout: stored)
    }

    /// `notModified(_:isAbout:)` reading the `304`'s fields with `field` (by lowercased name): only
    /// `ETag` and `Last-Modified` are read, so a head is asked without a dictionary of its fields.
    static func notModified(field: (String) -> String?, isAbout stored: StoredResponse) -> Bool {
        if let tag = field("etag") {
            guard let storedTag = stored.fields["etag"] else { return false }
            let strong = !tag.hasPrefix("W/") && !storedTag.hasPrefix("W/")
            return strong ? tag == storedTag : opaqueTag(tag) == opaqueTag(storedTag)
        }
        if let modified = field("last-modified") {
            return stored.fields["last-modified"] == modified
        }
        return true
    }

    /// An entity tag without its weakness prefix, for weak comparison.
    private static func opaqueTag(_ tag: String) -> String {
        tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
    }

    /// `stored` freshened by a `304` (§4.3.4): every field of the `304` replaces the stored one except
    /// those `fieldsKeptOn304` and hop-by-hop ones (§3.2), an `Age` of the stored response no longer
    /// counts, and the request and response times become the validation's. `notModified`: the `304`'s
    /// header fields.
    static func freshened(_ stored: StoredResponse, by notModified: [String: String],
                          requestTime: Date, responseTime: Date) -> StoredResponse {
        var fields = stored.fields
        fields["age"] = nil
        for (name, value) in Storability.storedFields(of: notModified.lowercasedNames) where !fieldsKeptOn304.contains(name) {
            fields[name] = value
        }
        var freshened = stored
        freshened.replaceHeaders(fields)
        freshened.requestTime = requestTime
        freshened.responseTime = responseTime
        return freshened
    }
}
