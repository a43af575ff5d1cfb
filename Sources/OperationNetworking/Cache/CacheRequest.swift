import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the cache needs to know of a request: its URL, method, policy, directives and the header
/// fields it goes out with, and what the operation adds (its trust, its size limit).
/// - Threading: immutable. An object, not a value: a run's phases, its plan and a background
///   revalidation pass it on, and a value holding Foundation's `URL` is copied and destroyed through its
///   generic witnesses each time, where an object is one retain.
final class CacheRequest: Sendable {
    /// The request's URL (the cache's primary key, §2).
    let url: URL
    /// The method in upper case.
    let method: String
    let policy: URLRequest.CachePolicy
    /// The request's `Cache-Control` directives; `Pragma: no-cache` counts as `no-cache` when the
    /// request has no `Cache-Control` (RFC 7234 §5.4, kept by RFC 9111 for old clients).
    let control: CacheControl
    /// The request's own header fields, names as the caller spelled them (read by name with `header(_:)`).
    private let ownFields: [String: String]
    /// The trust identity of the operation's security policy (`CacheTrust`): an `https` entry answers
    /// only the identity it was fetched under, and a response is stored under this one.
    let trust: String
    /// The operation's `maximumResponseSize`: a stored body larger than it answers nothing (the network
    /// would have refused it).
    let maximumBodySize: Int64?
    /// Whether a stale response within its `stale-while-revalidate` window may answer while a run of the
    /// library's own revalidates it: only for an operation whose revalidation runs no code of the app's
    /// (set by the operation's lookup; see `BackgroundRevalidation`).
    let mayRevalidateInBackground: Bool

    /// The request's fields that make it a partial or conditional request of the caller's own: the
    /// cache stays out of those (their answers, 206 and 304, are the caller's to handle).
    static let callerPreconditions: Set<String> = ["range", "if-range", "if-none-match", "if-modified-since",
                                                   "if-match", "if-unmodified-since"]

    /// Methods whose response may be stored and reused (§2: GET; HEAD is left out, since its empty body
    /// would answer a later GET of the same URL).
    static let cacheableMethods: Set<String> = ["GET"]

    /// Methods that do not change the resource (RFC 9110 §9.2.1); every other one invalidates (§4.4).
    static let safeMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE"]

    /// `request` as the cache reads it; `nil` without a URL. The other parameters are the operation's
    /// (see the properties of those names).
    init?(_ request: URLRequest, trust: String = CacheTrust.system, maximumBodySize: Int64? = nil,
          mayRevalidateInBackground: Bool = false) {
        guard let url = request.url else { return nil }
        self.url = url
        self.trust = trust
        self.maximumBodySize = maximumBodySize
        self.mayRevalidateInBackground = mayRevalidateInBackground
        method = request.uppercasedMethod
        policy = request.cachePolicy
        let fields = request.allHTTPHeaderFields ?? [:]
        ownFields = fields
        // The few fields the cache decides by, found in one pass over the names (by length first), without
        // a dictionary of lowercased names: most requests carry none of them.
        var cacheControl: String?, pragma: String?, host: String?, authorization = false, precondition = false
        for (name, value) in fields {
            switch name.utf8.count {
            case 4 where asciiCaseInsensitiveEquals(name, "host"): host = value
            case 6 where asciiCaseInsensitiveEquals(name, "pragma"): pragma = value
            case 13 where asciiCaseInsensitiveEquals(name, "cache-control"): cacheControl = value
            case 13 where asciiCaseInsensitiveEquals(name, "authorization"): authorization = true
            default: precondition = precondition || CacheRequest.isCallerPrecondition(name)
            }
        }
        hasAuthorizationField = authorization
        usesCache = CacheRequest.cacheableMethods.contains(method) && !precondition
            && !CacheRequest.namesAnotherHost(host, url: url)
        if let cacheControl {
            control = CacheControl(cacheControl)
        } else if let pragma, CacheControl.listMembers(pragma).contains(where: { asciiLowercased($0) == "no-cache" }) {
            control = CacheControl("no-cache")
        } else {
            control = .empty
        }
    }

    /// The value of the field `name` (lowercase) as the transfer sends it: the request's own, in any
    /// spelling, or the `Accept-Encoding` the library adds when the request has none (a response's
    /// `Vary` names it often).
    func header(_ name: String) -> String? {
        if let own = ownFields.headerValue(name) { return own }
        return name == "accept-encoding" ? Transfer.offeredEncodings : nil
    }

    /// The header fields as the transfer sends them, by lowercased name (made when read).
    var headers: [String: String] {
        var headers = ownFields.lowercasedNames
        if headers["accept-encoding"] == nil { headers["accept-encoding"] = Transfer.offeredEncodings }
        return headers
    }

    /// Whether the request has an `Authorization` field of its own.
    private let hasAuthorizationField: Bool

    private static func isCallerPrecondition(_ name: String) -> Bool {
        // Every one of them is 5, 8, 13, 17 or 19 bytes long.
        switch name.utf8.count {
        case 5, 8, 13, 17, 19: return callerPreconditions.contains { asciiCaseInsensitiveEquals(name, $0) }
        default: return false
        }
    }

    /// Whether the request may be answered from the cache and its response stored: a GET the caller
    /// did not make partial or conditional, nor addressed to another host with a `Host` field of its own
    /// (the cache's key is the URL, so two virtual hosts behind one address would share an entry).
    /// Decided once, when the request is read: the cache asks it several times a run.
    let usesCache: Bool

    /// Whether the request's own `Host` field names something other than its URL's authority.
    private static func namesAnotherHost(_ field: String?, url: URL) -> Bool {
        guard let field else { return false }
        let named = asciiLowercased(CacheControl.trimmingOWS(field))
        guard let host = url.host.map(asciiLowercased) else { return true }
        let bracketed = host.contains(":") ? "[\(host)]" : host
        var authorities = [bracketed]
        if let port = url.port { authorities.append("\(bracketed):\(port)") }
        return !authorities.contains(named)
    }

    /// Whether the request's policy reads stored responses at all (every policy but the ones that
    /// reload ignoring them), for a request that `usesCache`: the storage is read only then.
    var readsStoredResponses: Bool {
        guard usesCache else { return false }
        switch policy {
        case .useProtocolCachePolicy, .returnCacheDataElseLoad, .returnCacheDataDontLoad, .reloadRevalidatingCacheData:
            return true
        default:
            return false
        }
    }

    /// Whether the request carries credentials of its own (§3.5): an `Authorization` field, or a user
    /// name or password in its URL (which libcurl sends as one).
    var hasAuthorization: Bool { hasAuthorizationField || url.user != nil || url.password != nil }
}

/// The directives of a `Cache-Control` field (RFC 9111 §5.2), parsed once.
///
/// Names are compared without case; an argument may be a token or a quoted string (§5.2: both forms
/// are accepted for every directive). A directive whose argument is missing or not delta-seconds
/// where delta-seconds are required, or one that comes twice with different arguments, is *invalid*:
/// §4.2.1 lets a cache take the first occurrence or treat the response as stale, and encourages stale
/// for invalid freshness information, so an invalid `max-age` makes the response stale
/// (`maxAge == 0`) and an invalid `max-stale` or `min-fresh` is ignored on requests. Directives the
/// library does not know are kept and ignored (§5.2.3).
/// - Threading: an immutable value.
struct CacheControl: Equatable, Sendable {
    /// A directive's argument as parsed.
    /// - Threading: an immutable value.
    enum Argument: Equatable, Sendable {
        /// No `=` at all.
        case bare
        /// `delta-seconds` (clamped to 2^31, §1.2.2).
        case seconds(Int)
        /// Anything else, unquoted.
        case text(String)
    }

    /// A directive by lowercased name: the first occurrence's argument, or `nil` when repeated with a
    /// different one (then it counts as invalid).
    private struct Directive: Equatable, Sendable {
        let name: String
        var argument: Argument?
    }

    /// Every directive once, in the order met. A list, not a dictionary: a field holds a few
    /// directives, and a response's end parses one (hashing them would cost more than reading them).
    private let directives: [Directive]

    /// The largest delta-seconds value kept; larger ones (or ones that overflow) become this (§1.2.2).
    static let maximumDeltaSeconds = 2_147_483_648

    /// No directive.
    static let empty = CacheControl(directives: [])

    private init(directives: [Directive]) {
        self.directives = directives
    }

    /// Parses the value of one or more `Cache-Control` fields (already joined with commas, as a
    /// response's header dictionary joins repeated fields); `nil` parses as no directive. Read from the
    /// bytes: the separators (commas, `=`, quotes, white space) are ASCII.
    init(_ fieldValue: String?) {
        guard var value = fieldValue, !value.isEmpty else {
            self.init(directives: [])
            return
        }
        var found: [Directive] = []
        value.withUTF8 { bytes in
            CacheControl.forEachMember(of: bytes) { member in
                let (name, argument) = CacheControl.directive(member)
                guard !name.isEmpty else { return }
                if let earlier = found.firstIndex(where: { $0.name == name }) {
                    // Repeated: the same argument again changes nothing; a different one is a conflict.
                    if found[earlier].argument != argument { found[earlier].argument = nil }
                } else {
                    found.append(Directive(name: name, argument: argument))
                }
            }
        }
        self.init(directives: found)
    }

    /// The same directives with the same arguments, in any order.
    static func == (one: CacheControl, other: CacheControl) -> Bool {
        one.directives.count == other.directives.count && one.directives.allSatisfy(other.directives.contains)
    }

    /// The directive named `name` (lowercase), if present.
    private func directive(_ name: String) -> Directive? {
        directives.first { $0.name == name }
    }

    // MARK: - Reading

    /// Whether the directive is present at all (with or without a valid argument).
    func has(_ name: String) -> Bool {
        directive(name) != nil
    }

    /// Whether the directive is present without an argument (`no-cache`, not `no-cache="set-cookie"`).
    func hasBare(_ name: String) -> Bool {
        directive(name)?.argument == .some(.bare)
    }

    /// The delta-seconds of a directive that needs them: `.valid(n)`, `.invalid` when present without a
    /// usable number (missing, not digits, or repeated with different values), `.absent`.
    func seconds(_ name: String) -> Seconds {
        guard let entry = directive(name) else { return .absent }
        guard case .seconds(let value)? = entry.argument else { return .invalid }
        return .valid(value)
    }

    /// What `seconds(_:)` found.
    /// - Threading: an immutable value.
    enum Seconds: Equatable, Sendable {
        case absent
        case invalid
        case valid(Int)
    }

    /// `max-stale`, which may come without an argument: `.any` then (any staleness is acceptable).
    var maxStale: MaxStale {
        guard let entry = directive("max-stale") else { return .absent }
        switch entry.argument {
        case .bare?: return .any
        case .seconds(let value)?: return .limit(value)
        case .text?, nil: return .absent   // invalid: ignored, the stricter reading
        }
    }

    /// What a request's `max-stale` allows.
    /// - Threading: an immutable value.
    enum MaxStale: Equatable, Sendable {
        case absent
        case any
        case limit(Int)
    }

    // MARK: - Parsing

    /// The members of a comma-separated list, commas inside quoted strings kept, each trimmed; read
    /// byte by byte (commas, quotes, backslashes and white space are ASCII).
    static func listMembers(_ value: String) -> [String] {
        var value = value
        var members: [String] = []
        value.withUTF8 { bytes in
            forEachMember(of: bytes) { members.append(String(decoding: $0, as: UTF8.self)) }
        }
        return members
    }

    /// `text` without the optional white space (spaces and tabs, RFC 9110 §5.6.3) around it.
    static func trimmingOWS<Text: StringProtocol>(_ whole: Text) -> String {
        let text = Substring(whole)
        let bytes = text.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while start < end {
            let last = bytes.index(before: end)
            guard bytes[last] == 0x20 || bytes[last] == 0x09 else { break }
            end = last
        }
        return String(text[start..<end])
    }

    /// Calls `body` with each member of the comma-separated list in `bytes`, commas inside quoted
    /// strings kept, each without the white space around it; empty members are skipped.
    private static func forEachMember(of bytes: UnsafeBufferPointer<UInt8>,
                                      _ body: (UnsafeBufferPointer<UInt8>.SubSequence) -> Void) {
        var start = bytes.startIndex
        var quoted = false
        var escaped = false
        for index in bytes.indices {
            let byte = bytes[index]
            if escaped {
                escaped = false
            } else if quoted && byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                quoted.toggle()
            } else if byte == UInt8(ascii: ",") && !quoted {
                let member = trimmingOWS(bytes[start..<index])
                if !member.isEmpty { body(member) }
                start = index + 1
            }
        }
        let last = trimmingOWS(bytes[start..<bytes.endIndex])
        if !last.isEmpty { body(last) }
    }

    /// `bytes` without the optional white space (spaces and tabs) around them.
    private static func trimmingOWS(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence) -> UnsafeBufferPointer<UInt8>.SubSequence {
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while start < end, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }

    /// One `name[=argument]` member: the lowercased name and the argument.
    private static func directive(_ member: UnsafeBufferPointer<UInt8>.SubSequence) -> (String, Argument) {
        guard let equals = member.firstIndex(of: UInt8(ascii: "=")) else {
            return (lowercasedText(member), .bare)
        }
        let name = lowercasedText(trimmingOWS(member[..<equals]))
        let text = unquoted(String(decoding: trimmingOWS(member[(equals + 1)...]), as: UTF8.self))
        if let seconds = deltaSeconds(text) { return (name, .seconds(seconds)) }
        return (name, .text(text))
    }

    /// `bytes` as text, ASCII letters lowercased (most directives come lowercase: then nothing is mapped).
    private static func lowercasedText(_ bytes: UnsafeBufferPointer<UInt8>.SubSequence) -> String {
        guard bytes.contains(where: { (0x41...0x5A).contains($0) }) else { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes.map(asciiLower), as: UTF8.self)
    }

    /// The text of a quoted string (escapes undone), or `value` itself when it is not quoted.
    static func unquoted(_ value: String) -> String {
        guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return value }
        var result = ""
        var escaped = false
        for character in value.dropFirst().dropLast() {
            if !escaped && character == "\\" {
                escaped = true
                continue
            }
            escaped = false
            result.append(character)
        }
        return result
    }

    /// `1*DIGIT` as a count of seconds, clamped to `maximumDeltaSeconds`; `nil` for anything else.
    static func deltaSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        var value = 0
        for digit in text.utf8 {
            value = value * 10 + Int(digit - 0x30)
            if value >= maximumDeltaSeconds { return maximumDeltaSeconds }
        }
        return value
    }
}

extension CacheState {
    /// A response the transfer received whole: its head as it came (no Foundation `HTTPURLResponse`
    /// is built for the cache, nor a dictionary of its fields unless a rule reads more than a few of
    /// them: see `fields`). An object, for the reason `CacheRequest` is one.
    final class Received: Sendable {
        let head: ResponseHead
        /// The body, or `nil` when it may not be stored (streamed to an output stream).
        let body: Data?
        /// The last hop's request (after redirects), whose fields a `Vary` names.
        let finalRequest: CacheRequest?
        /// Whether the body fits the cache (`CacheStorage.takes(bodyOfSize:)`).
        let fitsCache: Bool
        let requestTime: Date
        let responseTime: Date

        /// The URL of the hop that answered.
        var url: URL { head.url }
        var statusCode: Int { head.statusCode }

        /// Its header fields by lowercased name (repeated fields joined), made from the head each time
        /// it is read: only a store, a `304` and an invalidation read them; whether a response may be
        /// stored reads `Cache-Control`, `Expires` and `Vary` from the head itself.
        var fields: [String: String] { head.lowercasedFieldDictionary }

        init(head: ResponseHead, body: Data?, finalRequest: CacheRequest?, fitsCache: Bool, requestTime: Date,
             responseTime: Date) {
            self.head = head
            self.body = body
            self.finalRequest = finalRequest
            self.fitsCache = fitsCache
            self.requestTime = requestTime
            self.responseTime = responseTime
        }

        /// A response of `url` and `statusCode` with `headers` (any spelling of the names).
        convenience init(url: URL, statusCode: Int, headers: [String: String], body: Data?, finalRequest: CacheRequest?,
             fitsCache: Bool, requestTime: Date, responseTime: Date) {
            self.init(head: ResponseHead(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1",
                                         fields: headers.map { ($0.key, $0.value) }),
                      body: body, finalRequest: finalRequest, fitsCache: fitsCache, requestTime: requestTime,
                      responseTime: responseTime)
        }
    }
}
