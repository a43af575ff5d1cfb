import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Collects the header lines curl hands to the header callback into a response head.
///
/// curl calls back once per line, status line included, and once with the empty line that ends a
/// block. Informational blocks (`100 Continue`, `103 Early Hints`) are recognised and dropped.
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
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[0..<end]), as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            startBlock(statusLine: text)
        } else if let first = text.first, first == " " || first == "\t", !fields.isEmpty {
            // Obsolete line folding: continues the previous value.
            fields[fields.count - 1].value += " " + text.trimmingCharacters(in: .whitespaces)
        } else if let colon = text.firstIndex(of: ":") {
            let name = String(text[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(text[text.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            if !name.isEmpty { fields.append((name, value)) }
        }
        return .none
    }

    /// The value of the first field named `name` (case-insensitive).
    func value(for name: String) -> String? {
        fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// All values of the fields named `name` (for `Set-Cookie`, which must not be joined).
    func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// Fields as Foundation wants them: repeated names joined with `", "`, the first spelling kept.
    var headerDictionary: [String: String] {
        var result: [String: String] = [:]
        var spelling: [String: String] = [:]
        for (name, value) in fields {
            let key = name.lowercased()
            if let existing = spelling[key] {
                result[existing] = (result[existing] ?? "") + ", " + value
            } else {
                spelling[key] = name
                result[name] = value
            }
        }
        return result
    }

    /// The response for `url`, once a head is complete.
    func makeResponse(url: URL) -> HTTPURLResponse? {
        HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: httpVersion, headerFields: headerDictionary)
    }

    private mutating func startBlock(statusLine: String) {
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        httpVersion = parts.first.map(String.init) ?? "HTTP/1.1"
        statusCode = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
        fields.removeAll(keepingCapacity: true)
        byteCount = statusLine.utf8.count + 2
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
}
