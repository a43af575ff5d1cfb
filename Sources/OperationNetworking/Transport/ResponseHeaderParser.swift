import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A response head as it came off the wire: status, version and fields in order.
///
/// Building Foundation's `HTTPURLResponse` is costly (it rewrites every header name), so the network
/// thread keeps this plain value and the operation builds the `HTTPURLResponse` on first use.
/// - Threading: an immutable value once complete.
struct ResponseHead: Sendable {
    /// The URL of the hop that answered.
    var url: URL
    var statusCode: Int
    /// `"HTTP/1.1"`, `"HTTP/2"`…
    var httpVersion: String
    /// Fields in arrival order, names as sent.
    var fields: [(name: String, value: String)]

    /// The value of the first field named `name` (ASCII case-insensitive).
    func value(for name: String) -> String? {
        fields.first { asciiCaseInsensitiveEqual($0.name, name) }?.value
    }

    /// All values of the fields named `name` (for `Set-Cookie`, which must not be joined).
    func values(for name: String) -> [String] {
        fields.filter { asciiCaseInsensitiveEqual($0.name, name) }.map(\.value)
    }

    /// `Content-Length` when the server sent a valid one, otherwise -1.
    var expectedContentLength: Int64 {
        value(for: "Content-Length").flatMap { Int64($0) } ?? -1
    }

    /// The media type of `Content-Type`, lowercased, without parameters (as `URLResponse.mimeType`).
    var mimeType: String? {
        guard let contentType = value(for: "Content-Type") else { return nil }
        let type = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        let trimmed = type.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : asciiLowercased(trimmed)
    }

    /// The `charset` parameter of `Content-Type` (as `URLResponse.textEncodingName`).
    var textEncodingName: String? {
        guard let contentType = value(for: "Content-Type") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, asciiLowercased(pair[0].trimmingCharacters(in: .whitespaces)) == "charset" else { continue }
            return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \""))
        }
        return nil
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

    /// Foundation's response for this head.
    func makeResponse() -> HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: headerDictionary)
    }
}

/// Collects the header lines curl hands to the header callback into a `ResponseHead`.
///
/// curl calls back once per line, status line included, and once with the empty line that ends a
/// block. Informational blocks (`100 Continue`, `103 Early Hints`) are recognised and dropped.
/// Lines are split at the byte level: this runs on the network thread for every header of every response.
/// - Threading: a plain value, owned by one `Transfer` on the network thread.
struct ResponseHeaderParser {
    /// What a consumed line completed.
    enum Event: Equatable {
        /// Nothing yet: the line was part of a block.
        case none
        /// A final response head is complete.
        case headComplete
        /// An informational (1xx) block ended and was discarded.
        case informational
        /// The block exceeded `limit` bytes.
        case tooLarge
    }

    /// Largest header block accepted, in bytes.
    let limit: Int
    /// Status code of the block being parsed (0 before its status line).
    private(set) var statusCode = 0
    /// `"HTTP/1.1"`, `"HTTP/2"`…, from the status line.
    private(set) var httpVersion = "HTTP/1.1"
    /// Header fields in arrival order, names as sent.
    private(set) var fields: [(name: String, value: String)] = []
    /// Bytes of the block so far.
    private var byteCount = 0

    init(limit: Int = Transfer.maxHeaderBytes) {
        self.limit = limit
    }

    /// Feeds one raw line (with its CRLF) from curl.
    mutating func consume(_ line: UnsafeRawBufferPointer) -> Event {
        byteCount += line.count
        if byteCount > limit { return .tooLarge }
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        if end == 0 { return finishBlock() }
        if end >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {   // "HTTP/"
            startBlock(line, end: end)
        } else if line[0] == 0x20 || line[0] == 0x09 {
            // Obsolete line folding: continues the previous value.
            guard !fields.isEmpty else { return .none }
            let (start, stop) = trimmed(line, 0, end)
            fields[fields.count - 1].value += " " + text(line, start, stop)
        } else if let colon = (0..<end).first(where: { line[$0] == 0x3A }) {
            let (nameStart, nameEnd) = trimmed(line, 0, colon)
            let (valueStart, valueEnd) = trimmed(line, colon + 1, end)
            if nameEnd > nameStart {
                fields.append((text(line, nameStart, nameEnd), text(line, valueStart, valueEnd)))
            }
        }
        return .none
    }

    /// The value of the first field named `name` in the block so far.
    func value(for name: String) -> String? {
        fields.first { asciiCaseInsensitiveEqual($0.name, name) }?.value
    }

    /// The completed head for `url`.
    func head(url: URL) -> ResponseHead {
        ResponseHead(url: url, statusCode: statusCode, httpVersion: httpVersion, fields: fields)
    }

    private mutating func startBlock(_ line: UnsafeRawBufferPointer, end: Int) {
        var index = 0
        while index < end, line[index] != 0x20 { index += 1 }
        httpVersion = text(line, 0, index)
        while index < end, line[index] == 0x20 { index += 1 }
        var code = 0, digits = 0
        while index < end, digits < 3, (0x30...0x39).contains(line[index]) {
            code = code * 10 + Int(line[index] - 0x30)
            index += 1
            digits += 1
        }
        statusCode = digits == 3 ? code : 0
        fields.removeAll(keepingCapacity: true)
        byteCount = end + 2
    }

    private mutating func finishBlock() -> Event {
        byteCount = 0
        if (100..<200).contains(statusCode) && statusCode != 101 {
            statusCode = 0
            fields.removeAll(keepingCapacity: true)
            return .informational
        }
        return .headComplete
    }

    private func trimmed(_ line: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> (Int, Int) {
        var start = start, end = end
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        return (start, end)
    }

    private func text(_ line: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<end]), as: UTF8.self)
    }
}

/// ASCII-only case-insensitive equality: header names are ASCII, and Foundation's comparison is slow.
func asciiCaseInsensitiveEqual(_ a: String, _ b: String) -> Bool {
    let x = a.utf8, y = b.utf8
    guard x.count == y.count else { return false }
    return zip(x, y).allSatisfy { asciiLower($0) == asciiLower($1) }
}

/// `string` with ASCII letters lowered (other bytes kept).
func asciiLowercased(_ string: String) -> String {
    String(decoding: string.utf8.map(asciiLower), as: UTF8.self)
}

@inline(__always) private func asciiLower(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
}
