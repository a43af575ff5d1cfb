import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Collects the header lines curl hands to the header callback into a `ResponseHead`.
///
/// curl calls back once per line, status line included, and once with the empty line that ends a
/// block. Informational blocks (`100 Continue`, `103 Early Hints`) are recognised and dropped.
/// A field line is only appended, as received, to one array; the block is split into fields once,
/// when it ends, in one pass over that array (the fields then point into it, so nothing is copied).
/// This runs on the network thread for every header of every response: per line, the split-as-it-
/// arrives form cost about 440 instructions, two array appends among them; this one about 300.
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
    /// The block's lines after its status line, as received (line ends included).
    private var raw: [UInt8] = []
    /// Whether a line of the block continues the one before (obsolete folding): its fields are then
    /// copied into storage of their own, where a folded value can be made contiguous.
    private var folded = false
    /// The fields as of the last split: `raw` itself, or the copy a folded block needs.
    private var storage: [UInt8] = []
    /// Each field's place in `storage`.
    private var spans: [FieldSpan] = []
    /// `raw.count` when it was last split (`-1`: not since it changed).
    private var splitLength = -1
    /// Bytes of the block so far, as received (line ends included).
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
            return .none
        }
        if raw.capacity == 0 { raw.reserveCapacity(512) }
        // Obsolete line folding: continues the previous value (see `split`).
        folded = folded || line[0] == 0x20 || line[0] == 0x09
        raw.append(contentsOf: line.assumingMemoryBound(to: UInt8.self))
        splitLength = -1
        return .none
    }

    /// The value of the first field named `name` in the block so far.
    func value(for name: String) -> String? {
        let (bytes, spans) = fields()
        return HeaderBytes.firstValue(named: name, in: bytes, spans: spans).map { HeaderBytes.text(bytes, $0.valueStart, $0.valueEnd) }
    }

    /// Whether the block so far has a field named `name`.
    func hasField(_ name: String) -> Bool {
        let (bytes, spans) = fields()
        return HeaderBytes.firstValue(named: name, in: bytes, spans: spans) != nil
    }

    /// The completed head for `url`. Changes nothing: `mutating` only so that a caller holding the
    /// parser in a class's stored property (`Transfer`) passes it in place; called as a non-mutating
    /// method it was first copied whole, about 400 instructions a response.
    mutating func head(url: URL) -> ResponseHead {
        let (bytes, spans) = fields()
        return ResponseHead(url: url, statusCode: statusCode, httpVersion: httpVersion, bytes: bytes, spans: spans)
    }

    /// The block's fields: those of the last split when nothing came since (always so once a block
    /// ended), else split now.
    private func fields() -> (bytes: [UInt8], spans: [FieldSpan]) {
        splitLength == raw.count ? (storage, spans) : ResponseHeaderParser.split(raw, folded: folded)
    }

    private mutating func startBlock(_ line: UnsafeRawBufferPointer, end: Int) {
        var index = 0
        while index < end, line[index] != 0x20 { index += 1 }
        httpVersion = ResponseHeaderParser.version(UnsafeRawBufferPointer(rebasing: line[0..<index]))
        while index < end, line[index] == 0x20 { index += 1 }
        var code = 0, digits = 0
        while index < end, digits < 3, (0x30...0x39).contains(line[index]) {
            code = code * 10 + Int(line[index] - 0x30)
            index += 1
            digits += 1
        }
        statusCode = digits == 3 ? code : 0
        clearFields()
        byteCount = end + 2
    }

    /// The common versions as literals (no allocation), anything else as received. Compared with
    /// `memcmp`: the generic `elementsEqual` over a string's UTF-8 view cost ~400 instructions a response.
    private static func version(_ bytes: UnsafeRawBufferPointer) -> String {
        if let base = bytes.baseAddress {
            if bytes.count == 8, memcmp(base, "HTTP/1.1", 8) == 0 { return "HTTP/1.1" }
            if bytes.count == 6, memcmp(base, "HTTP/2", 6) == 0 { return "HTTP/2" }
            if bytes.count == 8, memcmp(base, "HTTP/1.0", 8) == 0 { return "HTTP/1.0" }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private mutating func finishBlock() -> Event {
        byteCount = 0
        if (100..<200).contains(statusCode) && statusCode != 101 {
            statusCode = 0
            clearFields()
            return .informational
        }
        (storage, spans) = ResponseHeaderParser.split(raw, folded: folded)
        splitLength = raw.count
        return .headComplete
    }

    private mutating func clearFields() {
        raw.removeAll(keepingCapacity: true)
        storage = []
        spans = []
        folded = false
        splitLength = -1
    }

    /// Splits `raw` into fields: each from its name's first byte to its value's last, whitespace
    /// around both trimmed. A line without a colon or without a name is skipped. Unless the block has
    /// folded lines, the spans point into `raw` itself; with them, the fields are copied so that a
    /// continuation (trimmed, after one space) extends the value of the field stored last.
    static func split(_ raw: [UInt8], folded: Bool) -> (bytes: [UInt8], spans: [FieldSpan]) {
        var spans: [FieldSpan] = []
        spans.reserveCapacity(16)
        var copy: [UInt8] = []
        if folded { copy.reserveCapacity(raw.count) }
        raw.withUnsafeBytes { block in
            guard let base = block.baseAddress else { return }
            var start = 0
            while start < block.count {
                let lineEnd = memchr(base + start, 0x0A, block.count - start).map { base.distance(to: UnsafeRawPointer($0)) } ?? block.count
                var end = lineEnd
                while end > start, block[end - 1] == 0x0D { end -= 1 }
                defer { start = lineEnd + 1 }
                guard end > start else { continue }
                if block[start] == 0x20 || block[start] == 0x09 {
                    guard folded, !spans.isEmpty else { continue }
                    let (from, to) = trimmed(block, start, end)
                    copy.append(0x20)
                    copy.append(contentsOf: UnsafeRawBufferPointer(rebasing: block[from..<to]))
                    spans[spans.count - 1].valueEnd = Int32(copy.count)
                    continue
                }
                guard let found = memchr(base + start, 0x3A, end - start) else { continue }
                let colon = base.distance(to: UnsafeRawPointer(found))
                let (nameStart, nameEnd) = trimmed(block, start, colon)
                let (valueStart, valueEnd) = trimmed(block, colon + 1, end)
                guard nameEnd > nameStart else { continue }
                if !folded {
                    spans.append(FieldSpan(nameStart: Int32(nameStart), nameEnd: Int32(nameEnd),
                                           valueStart: Int32(valueStart), valueEnd: Int32(valueEnd)))
                    continue
                }
                let at = copy.count
                copy.append(contentsOf: UnsafeRawBufferPointer(rebasing: block[nameStart..<valueEnd]))
                spans.append(FieldSpan(nameStart: Int32(at), nameEnd: Int32(at + nameEnd - nameStart),
                                       valueStart: Int32(at + valueStart - nameStart), valueEnd: Int32(copy.count)))
            }
        }
        return (folded ? copy : raw, spans)
    }

    private static func trimmed(_ line: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> (Int, Int) {
        var start = start, end = end
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        return (start, end)
    }
}

/// `string` with ASCII letters lowered (other bytes kept).
func asciiLowercased(_ string: String) -> String {
    String(decoding: string.utf8.map(asciiLower), as: UTF8.self)
}

@inline(__always) func asciiLower(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
}
