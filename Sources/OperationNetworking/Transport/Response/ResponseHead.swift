import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where one header field lies in a head's byte storage.
/// - Threading: a value; copied (a `ResponseHead` keeps its own, immutable).
struct FieldSpan: Sendable {
    var nameStart: Int32, nameEnd: Int32, valueStart: Int32, valueEnd: Int32
}

/// A response head as it came off the wire: status, version and fields in order.
///
/// Names and values stay as the bytes received, in one array; a `String` is made only
/// for a field someone reads. What every response needs (length, media type, charset) is parsed once,
/// from bytes, when the head is complete. Building Foundation's `HTTPURLResponse` is costlier still
/// (it rewrites every header name), so the operation builds it on first use.
/// - Threading: immutable once made. A class, not a struct: one head is shared by the transfer, the
///   operation, its event monitors and serializers.
final class ResponseHead: Sendable {
    /// The URL of the hop that answered.
    let url: URL
    let statusCode: Int
    /// `"HTTP/1.1"`, `"HTTP/2"`…
    let httpVersion: String
    /// Names and values of the fields, as received, back to back.
    private let bytes: [UInt8]
    /// Each field's place in `bytes`, in arrival order.
    private let spans: [FieldSpan]
    /// `Content-Length` when the server sent a valid one, otherwise -1.
    let expectedContentLength: Int64
    /// Where the first `Content-Type` lies, parsed only when the media type or charset is read.
    private let contentType: FieldSpan?
    /// Where the first `Content-Length` lies.
    private let contentLength: FieldSpan?
    /// Where the first `Content-Encoding` lies.
    private let contentEncodingSpan: FieldSpan?
    /// Whether two `Content-Length` fields disagree (compared as bytes).
    let hasConflictingContentLengths: Bool
    /// Whether any `Set-Cookie` field came.
    let hasSetCookie: Bool

    /// A head from raw storage (the parser's), with what its fields say that every response needs.
    init(url: URL, statusCode: Int, httpVersion: String, bytes: [UInt8], spans: [FieldSpan]) {
        self.url = url
        self.statusCode = statusCode
        self.httpVersion = httpVersion
        self.bytes = bytes
        self.spans = spans
        var contentType: FieldSpan?, contentLength: FieldSpan?, contentEncoding: FieldSpan?
        var conflicting = false, setCookie = false
        // Each field is compared only with the name of its length (most fields have none here).
        for span in spans {
            switch span.nameEnd - span.nameStart {
            case 14 where HeaderBytes.nameMatches("Content-Length", bytes, span):
                if let first = contentLength {
                    conflicting = conflicting || !HeaderBytes.sameValue(bytes, span, first)
                } else {
                    contentLength = span
                }
            case 12 where HeaderBytes.nameMatches("Content-Type", bytes, span):
                contentType = contentType ?? span
            case 16 where HeaderBytes.nameMatches("Content-Encoding", bytes, span):
                contentEncoding = contentEncoding ?? span
            case 10 where HeaderBytes.nameMatches("Set-Cookie", bytes, span):
                setCookie = true
            default:
                break
            }
        }
        self.contentType = contentType
        self.contentLength = contentLength
        contentEncodingSpan = contentEncoding
        hasConflictingContentLengths = conflicting
        hasSetCookie = setCookie
        expectedContentLength = contentLength.flatMap { HeaderBytes.parseLength(bytes, $0) } ?? -1
    }

    /// Every `Set-Cookie` value, in order.
    var setCookieValues: [String] { values(for: "Set-Cookie") }

    /// The first `Content-Encoding` value.
    var contentEncoding: String? {
        contentEncodingSpan.map { HeaderBytes.text(bytes, $0.valueStart, $0.valueEnd) }
    }

    /// The length `Content-Length` announces when it is all digits, `Int64.max` when those digits do not
    /// fit; `nil` without one or for anything else.
    var declaredContentLength: Int64? {
        guard let span = contentLength,
              span.valueEnd > span.valueStart,
              bytes[Int(span.valueStart)..<Int(span.valueEnd)].allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return HeaderBytes.parseLength(bytes, span) ?? .max
    }

    /// The media type of `Content-Type`, lowercased, without parameters (as `URLResponse.mimeType`).
    var mimeType: String? {
        contentType.flatMap { HeaderBytes.parseContentType(bytes, $0).mimeType }
    }

    /// The `charset` parameter of `Content-Type` (as `URLResponse.textEncodingName`).
    var textEncodingName: String? {
        contentType.flatMap { HeaderBytes.parseContentType(bytes, $0).charset }
    }

    /// A head from decoded fields (an archive).
    convenience init(url: URL, statusCode: Int, httpVersion: String, fields: [(name: String, value: String)]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        var spans: [FieldSpan] = []
        spans.reserveCapacity(fields.count)
        for (name, value) in fields { ResponseHead.append(name, value, to: &bytes, &spans) }
        self.init(url: url, statusCode: statusCode, httpVersion: httpVersion, bytes: bytes, spans: spans)
    }

    /// Appends the field `name: value` to a head's storage.
    private static func append(_ name: String, _ value: String, to bytes: inout [UInt8], _ spans: inout [FieldSpan]) {
        var name = name, value = value
        let nameStart = Int32(clamping: bytes.count)
        name.withUTF8 { bytes.append(contentsOf: $0) }
        let valueStart = Int32(clamping: bytes.count)
        value.withUTF8 { bytes.append(contentsOf: $0) }
        spans.append(FieldSpan(nameStart: nameStart, nameEnd: valueStart, valueStart: valueStart,
                               valueEnd: Int32(clamping: bytes.count)))
    }

    /// The bytes its fields take (names, values and their places), for a cache's count of its memory.
    var fieldStorageSize: Int { bytes.count + spans.count * MemoryLayout<FieldSpan>.stride }

    /// This head with one more field, `name: value`, after the others (the cache's `Age` on a hit).
    func adding(name: String, value: String) -> ResponseHead {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(self.bytes.count + name.utf8.count + value.utf8.count)
        bytes.append(contentsOf: self.bytes)
        var spans: [FieldSpan] = []
        spans.reserveCapacity(self.spans.count + 1)
        spans.append(contentsOf: self.spans)
        ResponseHead.append(name, value, to: &bytes, &spans)
        return ResponseHead(url: url, statusCode: statusCode, httpVersion: httpVersion, bytes: bytes, spans: spans)
    }

    /// Fields in arrival order, names as sent.
    var fields: [(name: String, value: String)] {
        spans.map {
            (HeaderBytes.text(bytes, $0.nameStart, $0.nameEnd), HeaderBytes.text(bytes, $0.valueStart, $0.valueEnd))
        }
    }

    /// The value of the first field named `name` (ASCII case-insensitive).
    func value(for name: String) -> String? {
        HeaderBytes.first(named: name, in: bytes, spans).map { HeaderBytes.text(bytes, $0.valueStart, $0.valueEnd) }
    }

    /// All values of the fields named `name` (for `Set-Cookie`, which must not be joined).
    func values(for name: String) -> [String] {
        spans.filter { HeaderBytes.nameMatches(name, bytes, $0) }
            .map { HeaderBytes.text(bytes, $0.valueStart, $0.valueEnd) }
    }

    /// The value of the fields named `name` (ASCII case-insensitive), repeated ones joined with `", "`
    /// as `lowercasedFieldDictionary` joins them; `nil` without one. Made in one pass over the spans
    /// (a name of another length is passed over without reading a byte), the one value's `String` only.
    func joinedValue(for name: String) -> String? {
        var joined: String?
        for span in spans where HeaderBytes.nameMatches(name, bytes, span) {
            let value = HeaderBytes.text(bytes, span.valueStart, span.valueEnd)
            joined = joined.map { $0 + ", " + value } ?? value
        }
        return joined
    }

    /// Whether a field named `name` (ASCII case-insensitive) came.
    func hasField(_ name: String) -> Bool {
        HeaderBytes.first(named: name, in: bytes, spans) != nil
    }

    /// Whether `other` came with the same fields in the same order, names and values the same bytes,
    /// but for the values of the fields named `except` (ASCII case-insensitive): compared in place,
    /// without a `String` or a dictionary. False for the same fields in another order or spelling.
    func hasSameFields(as other: ResponseHead, except name: String) -> Bool {
        guard spans.count == other.spans.count else { return false }
        return bytes.withUnsafeBufferPointer { mine in
            other.bytes.withUnsafeBufferPointer { theirs in
                for (one, two) in zip(spans, other.spans) {
                    guard HeaderBytes.same(mine, one.nameStart, one.nameEnd, theirs, two.nameStart, two.nameEnd)
                    else { return false }
                    if HeaderBytes.nameMatches(name, bytes, one) { continue }
                    guard HeaderBytes.same(mine, one.valueStart, one.valueEnd, theirs, two.valueStart, two.valueEnd)
                    else { return false }
                }
                return true
            }
        }
    }

    /// Whether each field of `other` not named in `skipped` (lowercased names) comes once there and once
    /// here, with the same value bytes, and this head's `Connection` names no field outside `skipped`:
    /// then the fields a cache keeps of `other` by name (those `skipped` aside) are kept of this head with
    /// the same values. Compared in place (a `304` against the head of the response it validates);
    /// `false` settles nothing, and the caller compares the fields by name.
    func hasSameValues(forFieldsOf other: ResponseHead, except skipped: [String]) -> Bool {
        if let connection = value(for: "Connection"),
           !CacheControl.listMembers(connection).allSatisfy({ skipped.contains(asciiLowercased($0)) }) { return false }
        return bytes.withUnsafeBufferPointer { mine in
            other.bytes.withUnsafeBufferPointer { theirs in
                other.spans.allSatisfy { field in
                    if skipped.contains(where: { HeaderBytes.nameMatches($0, other.bytes, field) }) { return true }
                    var kept: FieldSpan?
                    for span in spans where HeaderBytes.sameName(theirs, field, mine, span) {
                        guard kept == nil else { return false }
                        kept = span
                    }
                    var count = 0
                    for span in other.spans where HeaderBytes.sameName(theirs, field, theirs, span) { count += 1 }
                    guard let kept, count == 1 else { return false }
                    return HeaderBytes.same(theirs, field.valueStart, field.valueEnd, mine, kept.valueStart, kept.valueEnd)
                }
            }
        }
    }

    /// Fields as Foundation wants them: repeated names joined with `", "`, the first spelling kept.
    var headerDictionary: [String: String] {
        var result: [String: String] = [:]
        var spelling: [String: String] = [:]
        for (name, value) in fields {
            let key = asciiLowercased(name)
            if let existing = spelling[key] {
                result[existing] = (result[existing] ?? "") + ", " + value
            } else {
                spelling[key] = name
                result[name] = value
            }
        }
        return result
    }

    /// Fields by lowercased name, repeated names joined with `", "` (the HTTP cache's form), made in one
    /// pass over the bytes.
    var lowercasedFieldDictionary: [String: String] { lowercasedFields(skipping: []).fields }

    /// The same dictionary without the names in `skipped` (lowercased), left out as they are read rather
    /// than taken out of a copy afterwards; `skippedConnection` is the `Connection` field's value when
    /// `skipped` left it out (its members name more fields a cache drops).
    func lowercasedFields(skipping skipped: Set<String>) -> (fields: [String: String], skippedConnection: String?) {
        var result: [String: String] = [:]
        var connection: String?
        result.reserveCapacity(spans.count)
        for span in spans {
            let name = HeaderBytes.lowercasedText(bytes, span.nameStart, span.nameEnd)
            let value = HeaderBytes.text(bytes, span.valueStart, span.valueEnd)
            if !skipped.isEmpty, skipped.contains(name) {
                if name == "connection" { connection = connection.map { $0 + ", " + value } ?? value }
                continue
            }
            // One lookup for a name met once (nearly all); a repeated one is joined in a second.
            if let earlier = result.updateValue(value, forKey: name) {
                result[name] = earlier + ", " + value
            }
        }
        return (result, connection)
    }

    /// Foundation's response for this head.
    func makeResponse() -> HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: headerDictionary)
    }
}

/// Byte-level helpers over a head's storage: no `String` is made until a value is asked for.
enum HeaderBytes {
    static func text(_ bytes: [UInt8], _ start: Int32, _ end: Int32) -> String {
        String(decoding: bytes[Int(start)..<Int(end)], as: UTF8.self)
    }

    /// The text of `bytes[start..<end]` with ASCII letters lowercased (a field's name), made from one
    /// contiguous buffer.
    static func lowercasedText(_ bytes: [UInt8], _ start: Int32, _ end: Int32) -> String {
        let count = Int(end - start)
        return String(unsafeUninitializedCapacity: count) { buffer in
            for index in 0..<count { buffer[index] = asciiLower(bytes[Int(start) + index]) }
            return count
        }
    }

    /// The place of the first field named `name` (ASCII case-insensitive).
    static func first(named name: String, in bytes: [UInt8], _ spans: [FieldSpan]) -> FieldSpan? {
        spans.first { nameMatches(name, bytes, $0) }
    }

    /// Whether `one[oneStart..<oneEnd]` and `other[otherStart..<otherEnd]` are the same bytes (false for
    /// a range outside its storage).
    static func same(_ one: UnsafeBufferPointer<UInt8>, _ oneStart: Int32, _ oneEnd: Int32,
                     _ other: UnsafeBufferPointer<UInt8>, _ otherStart: Int32, _ otherEnd: Int32) -> Bool {
        let count = Int(oneEnd) - Int(oneStart)
        guard count >= 0, count == Int(otherEnd) - Int(otherStart), oneStart >= 0, otherStart >= 0,
              Int(oneEnd) <= one.count, Int(otherEnd) <= other.count else { return false }
        guard count > 0, let first = one.baseAddress, let second = other.baseAddress else { return true }
        return memcmp(first + Int(oneStart), second + Int(otherStart), count) == 0
    }

    /// Whether the field at `one` in `first` and the one at `two` in `second` have the same name, ignoring
    /// ASCII case (the length first: most fields are turned away without reading a byte).
    static func sameName(_ first: UnsafeBufferPointer<UInt8>, _ one: FieldSpan,
                         _ second: UnsafeBufferPointer<UInt8>, _ two: FieldSpan) -> Bool {
        let count = Int(one.nameEnd) - Int(one.nameStart)
        guard count == Int(two.nameEnd) - Int(two.nameStart), one.nameStart >= 0, two.nameStart >= 0,
              Int(one.nameEnd) <= first.count, Int(two.nameEnd) <= second.count else { return false }
        return (0..<count).allSatisfy {
            asciiLower(first[Int(one.nameStart) + $0]) == asciiLower(second[Int(two.nameStart) + $0])
        }
    }

    /// Whether two fields have the same value, byte for byte.
    static func sameValue(_ bytes: [UInt8], _ one: FieldSpan, _ other: FieldSpan) -> Bool {
        bytes[Int(one.valueStart)..<Int(one.valueEnd)].elementsEqual(bytes[Int(other.valueStart)..<Int(other.valueEnd)])
    }

    static func nameMatches(_ name: String, _ bytes: [UInt8], _ span: FieldSpan) -> Bool {
        let length = Int(span.nameEnd) - Int(span.nameStart)
        let start = Int(span.nameStart)
        // The length first: it turns most fields away without reading a byte.
        guard name.utf8.count == length, start >= 0, start + length <= bytes.count else { return false }
        return bytes.withUnsafeBufferPointer { field in
            asciiCaseInsensitiveEquals(name, UnsafeBufferPointer(rebasing: field[start..<start + length]))
        }
    }

    /// A non-negative decimal `Content-Length`; `nil` for anything else (signs, spaces, overflow).
    static func parseLength(_ bytes: [UInt8], _ span: FieldSpan) -> Int64? {
        guard span.valueEnd > span.valueStart else { return nil }
        var value: Int64 = 0
        for index in Int(span.valueStart)..<Int(span.valueEnd) {
            let byte = bytes[index]
            guard (0x30...0x39).contains(byte) else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - 0x30))
            guard !overflow1 && !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// `type/subtype` lowercased and the `charset` parameter (quotes removed) of a `Content-Type`.
    static func parseContentType(_ bytes: [UInt8], _ span: FieldSpan) -> (mimeType: String?, charset: String?) {
        let end = Int(span.valueEnd)
        var index = Int(span.valueStart)
        var typeEnd = index
        while typeEnd < end, bytes[typeEnd] != 0x3B { typeEnd += 1 }   // ';'
        let (typeStart, typeStop) = trim(bytes, index, typeEnd)
        let mimeType = typeStop > typeStart ? String(unsafeUninitializedCapacity: typeStop - typeStart) { buffer in
            for index in typeStart..<typeStop { buffer[index - typeStart] = asciiLower(bytes[index]) }
            return typeStop - typeStart
        } : nil
        index = typeEnd
        while index < end {
            index += 1   // past ';'
            var parameterEnd = index
            while parameterEnd < end, bytes[parameterEnd] != 0x3B { parameterEnd += 1 }
            var equals = index
            while equals < parameterEnd, bytes[equals] != 0x3D { equals += 1 }   // '='
            let (nameStart, nameEnd) = trim(bytes, index, equals)
            if equals < parameterEnd, isCharset(bytes, nameStart, nameEnd) {
                var (valueStart, valueEnd) = trim(bytes, equals + 1, parameterEnd)
                while valueStart < valueEnd, bytes[valueStart] == 0x22 || bytes[valueStart] == 0x20 { valueStart += 1 }
                while valueEnd > valueStart, bytes[valueEnd - 1] == 0x22 || bytes[valueEnd - 1] == 0x20 { valueEnd -= 1 }
                return (mimeType, String(decoding: bytes[valueStart..<valueEnd], as: UTF8.self))
            }
            index = parameterEnd
        }
        return (mimeType, nil)
    }

    private static func isCharset(_ bytes: [UInt8], _ start: Int, _ end: Int) -> Bool {
        let word: [UInt8] = [0x63, 0x68, 0x61, 0x72, 0x73, 0x65, 0x74]   // "charset"
        guard end - start == word.count else { return false }
        return (0..<word.count).allSatisfy { asciiLower(bytes[start + $0]) == word[$0] }
    }

    private static func trim(_ bytes: [UInt8], _ start: Int, _ end: Int) -> (Int, Int) {
        var start = start, end = end
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return (start, end)
    }
}
