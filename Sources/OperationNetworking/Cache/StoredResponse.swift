import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response as the cache keeps it, with what RFC 9111 needs to judge it later: its parts, not
/// Foundation's `HTTPURLResponse`, whose initializer rewrites every field name and costs more than the
/// rest of a store; one is built only to deliver a stored response (`response`).
/// - Threading: a value. Its parts are kept in one immutable object that copies share (a stored
///   response goes from the store into a run's phase, its plan and a delivery: one reference counted,
///   not each field's own); a change makes a new one.
struct StoredResponse: Sendable {
    /// Every part, as the accessors below describe them.
    private struct Parts: Sendable {
        var url: URL
        var statusCode: Int
        var fields: [String: String]
        var facts: FreshnessFacts
        var body: Data
        var varyingRequestHeaders: [String: String]
        var requestTime: Date
        var responseTime: Date
        var trust: String?
        var head: ResponseHead?
        var answeringHead: ResponseHead?
        var place: Place?
    }

    /// The parts, never changed once made.
    private final class SharedParts: Sendable {
        let parts: Parts
        init(_ parts: Parts) { self.parts = parts }
    }

    private var shared: SharedParts

    /// Changes a part: the parts are copied into a new object (copies made before keep theirs).
    private mutating func change(_ edit: (inout Parts) -> Void) {
        var parts = shared.parts
        edit(&parts)
        shared = SharedParts(parts)
    }

    /// The URL it came from (its final URL).
    var url: URL { shared.parts.url }
    var statusCode: Int { shared.parts.statusCode }
    /// Its header fields as stored, by lowercased name: every rule of the cache reads them
    /// (`fields["cache-control"]`). The spelling of a name is not kept: Foundation's `HTTPURLResponse`
    /// rewrites every name it is given anyway.
    var fields: [String: String] { shared.parts.fields }
    /// What `fields` say about freshness, parsed once.
    var facts: FreshnessFacts { shared.parts.facts }
    /// The same fields (the name `HTTPURLResponse(…headerFields:)` gives them).
    var headers: [String: String] { shared.parts.fields }
    /// The stored body.
    var body: Data {
        get { shared.parts.body }
        set { change { $0.body = newValue } }
    }
    /// The request header fields the response's `Vary` names, as they were sent (names lowercased), for
    /// RFC 9111 §4.1's comparison with a later request.
    var varyingRequestHeaders: [String: String] {
        get { shared.parts.varyingRequestHeaders }
        set { change { $0.varyingRequestHeaders = newValue } }
    }
    /// When the request that fetched the response was sent (RFC 9111 §4.2.3 `request_time`).
    var requestTime: Date {
        get { shared.parts.requestTime }
        set { change { $0.requestTime = newValue } }
    }
    /// When the response was received (RFC 9111 §4.2.3 `response_time`).
    var responseTime: Date {
        get { shared.parts.responseTime }
        set { change { $0.responseTime = newValue } }
    }
    /// The trust identity of the connection that fetched it (`CacheTrust`); `nil` for a URL that is not
    /// `https`, or an entry stored without metadata.
    var trust: String? {
        get { shared.parts.trust }
        set { change { $0.trust = newValue } }
    }
    /// The head it came with, when it came from the network in this process without `Set-Cookie`: its
    /// fields but `Date` give `fields` (a response that came again with the same head but `Date` has
    /// the same fields but `Date`). `nil` for one read from the file, stored by the app, or freshened
    /// by a `304`.
    var head: ResponseHead? { shared.parts.head }
    /// The head a hit delivers, but for its `Age` (`answeringHead(url:statusCode:fields:facts:)`), made
    /// once with the entry; `nil` when it would rarely answer without the network, or was not kept.
    var answeringHead: ResponseHead? { shared.parts.answeringHead }
    /// Where the library's store holds it: read from there, it is the entry stored under `key` at
    /// `storedAt`, which a later store of the key replaces. `nil` for a response not read from it.
    var place: Place? {
        get { shared.parts.place }
        set { change { $0.place = newValue } }
    }

    /// Where a stored response was found in the library's store (`SQLiteURLCache`).
    struct Place: Sendable {
        let key: String
        let storedAt: Double
    }

    /// A stored response of `url`, `statusCode` and `headers` (any spelling of the names); `fields`,
    /// when given, are already `headers` by lowercased name.
    init(url: URL, statusCode: Int, headers: [String: String], body: Data, varyingRequestHeaders: [String: String],
         requestTime: Date, responseTime: Date, trust: String? = nil, fields: [String: String]? = nil,
         facts: FreshnessFacts? = nil, head: ResponseHead? = nil, answeringHead: ResponseHead? = nil,
         place: Place? = nil) {
        let fields = fields ?? headers.lowercasedNames
        shared = SharedParts(Parts(url: url, statusCode: statusCode, fields: fields, facts: facts ?? FreshnessFacts(fields),
                                   body: body, varyingRequestHeaders: varyingRequestHeaders, requestTime: requestTime,
                                   responseTime: responseTime, trust: trust, head: head, answeringHead: answeringHead,
                                   place: place))
    }

    /// The head a hit on a response of `url`, `statusCode` and `fields` (by lowercased name) delivers,
    /// without its `Age` (each hit adds its own), when the fields give it a time to be used without the
    /// network (`FreshnessFacts.carriesNoTime`, `alwaysValidated`); `nil` otherwise, and a hit on such
    /// a response (`.returnCacheDataElseLoad`) builds its head then. Made once per entry, when it is
    /// stored or read from the file, instead of on every hit.
    static func answeringHead(url: URL, statusCode: Int, fields: [String: String], facts: FreshnessFacts) -> ResponseHead? {
        guard !facts.carriesNoTime, !facts.alwaysValidated else { return nil }
        return ResponseHead(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1",
                            fields: fields.compactMap { $0.key == "age" ? nil : ($0.key, $0.value) })
    }

    /// A stored response of Foundation's `response` (nil when it has no URL).
    init?(response: HTTPURLResponse, body: Data, varyingRequestHeaders: [String: String], requestTime: Date,
          responseTime: Date, trust: String? = nil) {
        guard let url = response.url else { return nil }
        self.init(url: url, statusCode: response.statusCode, headers: response.headerFields, body: body,
                  varyingRequestHeaders: varyingRequestHeaders, requestTime: requestTime, responseTime: responseTime,
                  trust: trust)
    }

    /// Replaces the header fields (it no longer has the head it came with).
    mutating func replaceHeaders(_ headers: [String: String]) {
        change { parts in
            parts.fields = headers.lowercasedNames
            parts.facts = FreshnessFacts(parts.fields)
            parts.head = nil
            parts.answeringHead = nil
        }
    }

    /// Whether a response received with `head` and `body`, stored with `varying` and `trust`, only
    /// repeats this one where nothing depends on when it came (`CacheState.Repeat`): the same status,
    /// URL, body, trust and secondary key, the same head but `Date` (compared as bytes, with the head
    /// this one came with), and fields that give no freshness lifetime and no time to serve it stale
    /// (`FreshnessFacts.carriesNoTime`) or say a bare `no-cache`. False when this one has no head.
    func isRepeated(by head: ResponseHead, body: Data, varying: [String: String], trust: String?) -> Bool {
        guard let mine = self.head, facts.carriesNoTime || facts.alwaysValidated, statusCode == head.statusCode,
              self.body.count == body.count, self.trust == trust, varyingRequestHeaders == varying,
              mine.hasSameFields(as: head, except: "Date"), url == head.url else { return false }
        return self.body == body
    }

    /// Whether a `304` about this response, which came with `head`, only repeats it where nothing depends
    /// on when it came: it changes no field but `Date` (those a `304` never changes,
    /// `Validation.fieldsKeptOn304`, aside), this one has no `Age` to drop, and its fields give no
    /// freshness lifetime and no time to serve it stale, or say a bare `no-cache`. Compared in place with
    /// the head this one came with when that settles it (`ResponseHead.hasSameValues`), else by name.
    func isRepeated(byNotModified notModified: ResponseHead) -> Bool {
        guard facts.carriesNoTime || facts.alwaysValidated, fields["age"] == nil else { return false }
        if let head, head.hasSameValues(forFieldsOf: notModified, except: Validation.fieldsNotComparedOn304) { return true }
        return Storability.storedFields(of: notModified).allSatisfy { name, value in
            Validation.fieldsNotComparedOn304.contains(name) || fields[name] == value
        }
    }

    /// The head a `304` that repeats it delivers (`isRepeated(byNotModified:)`): its fields, with the
    /// `304`'s `Date` when it has one.
    func validatedHead(date: String?) -> ResponseHead {
        var fields = self.fields.map { (name: $0.key, value: $0.key == "date" ? date ?? $0.value : $0.value) }
        if let date, self.fields["date"] == nil { fields.append((name: "date", value: date)) }
        return ResponseHead(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", fields: fields)
    }

    /// Foundation's response for it, to deliver or to hand an app (nil when Foundation will not build it).
    var response: HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1", headerFields: headers)
    }
}
