import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns the header blocks curl hands over, line by line, into `ResponseHead`s.
///
/// curl calls back once per line, status line included, and once with the empty line that ends a
/// block. The lines are taken in C (`ccurl_header_block`, one per easy handle): a field line is kept
/// there, as received, with where its name and value lie, and Swift hears of a block's status line and
/// of its end. Informational blocks (`100 Continue`, `103 Early Hints`) are recognised and dropped.
/// When a final block ends, its kept lines are copied into one array and the fields point into it; a
/// block with folded lines is split again here instead (`splitFolded`), rare enough not to matter.
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
        /// The block exceeded its limit.
        case tooLarge
        /// No memory was left to keep the line.
        case outOfMemory
    }

    /// Status code of the block being parsed (0 before its status line).
    private(set) var statusCode = 0
    /// `"HTTP/1.1"`, `"HTTP/2"`…, from the status line.
    private(set) var httpVersion = "HTTP/1.1"
    /// The fields of the block as of its end (the kept lines, or the copy a folded block needs), and
    /// each field's place among them.
    private var fields = HeadFields.empty
    /// What the C block noted of `fields` as they came; `nil` when they were split again here.
    private var summary: ccurl_head_summary?

    init() {}

    /// What `block` said of `line` (a `CCURL_HEADER_` event), applied.
    mutating func handle(_ event: Int32, line: UnsafeRawBufferPointer,
                         block: UnsafeMutablePointer<ccurl_header_block>) -> Event {
        switch event {
        case CCURL_HEADER_STATUS:
            startBlock(line)
            return .none
        case CCURL_HEADER_END:
            return finishBlock(block)
        case CCURL_HEADER_TOO_LARGE:
            return .tooLarge
        case CCURL_HEADER_NO_MEMORY:
            return .outOfMemory
        default:
            return .none
        }
    }

    /// The value of the first field named `name` in the last block that ended.
    func value(for name: String) -> String? {
        fields.first(named: name).map { HeaderBytes.text(fields.storage, $0.valueStart, $0.valueEnd) }
    }

    /// Whether the last block that ended has a field named `name`.
    func hasField(_ name: String) -> Bool {
        fields.first(named: name) != nil
    }

    /// The completed head for `url`.
    func head(url: URL) -> ResponseHead {
        ResponseHead(url: url, statusCode: statusCode, httpVersion: httpVersion, fields: fields, summary: summary)
    }

    private mutating func startBlock(_ line: UnsafeRawBufferPointer) {
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
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
        fields = .empty
        summary = nil
    }

    /// The common versions as literals, anything else as received.
    private static func version(_ bytes: UnsafeRawBufferPointer) -> String {
        if let base = bytes.baseAddress {
            if bytes.count == 8, memcmp(base, "HTTP/1.1", 8) == 0 { return "HTTP/1.1" }
            if bytes.count == 6, memcmp(base, "HTTP/2", 6) == 0 { return "HTTP/2" }
            if bytes.count == 8, memcmp(base, "HTTP/1.0", 8) == 0 { return "HTTP/1.0" }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A block ended: an informational one is dropped; a final one's lines and fields are taken from
    /// `block`. Lines kept after a final block (trailers) extend it, and their end takes it again.
    private mutating func finishBlock(_ block: UnsafeMutablePointer<ccurl_header_block>) -> Event {
        if (100..<200).contains(statusCode) && statusCode != 101 {
            statusCode = 0
            fields = .empty
            summary = nil
            ccurl_header_block_clear_lines(block)
            return .informational
        }
        if block.pointee.folded != 0 {
            let raw = block.pointee.bytes.map { [UInt8](UnsafeBufferPointer(start: $0, count: block.pointee.count)) } ?? []
            let (bytes, spans) = ResponseHeaderParser.splitFolded(raw)
            fields = HeadFields(bytes: bytes, spans: spans)
            summary = nil
            return .headComplete
        }
        // The fields and their summary as the block found them, line by line, bytes and spans taken
        // into one array.
        fields = HeadFields(bytes: block.pointee.bytes.map { UnsafeRawPointer($0) }, byteCount: block.pointee.count,
                            spans: block.pointee.spans.map { UnsafeRawPointer($0) }, count: block.pointee.span_count)
        summary = block.pointee.summary
        return .headComplete
    }

    /// Splits a block with folded lines into fields, as the C block does line by line (each field from
    /// its name's first byte to its value's last, whitespace around both trimmed; a line without a
    /// colon or without a name skipped), into a copy where a continuation (trimmed, after one space)
    /// extends the value of the field stored last.
    static func splitFolded(_ raw: [UInt8]) -> (bytes: [UInt8], spans: [FieldSpan]) {
        var spans: [FieldSpan] = []
        spans.reserveCapacity(16)
        var copy: [UInt8] = []
        copy.reserveCapacity(raw.count)
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
                    guard !spans.isEmpty else { continue }
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
                let at = copy.count
                copy.append(contentsOf: UnsafeRawBufferPointer(rebasing: block[nameStart..<valueEnd]))
                spans.append(FieldSpan(nameStart: Int32(at), nameEnd: Int32(at + nameEnd - nameStart),
                                       valueStart: Int32(at + valueStart - nameStart), valueEnd: Int32(copy.count)))
            }
        }
        return (copy, spans)
    }

    private static func trimmed(_ line: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> (Int, Int) {
        var start = start, end = end
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        return (start, end)
    }
}

/// A parser with a header block of its own, fed one line at a time as curl's header callback feeds a
/// transfer's: for the tests and the fuzzer, which have no easy handle.
/// - Threading: not `Sendable`; one thread at a time.
final class StandaloneHeaderParser {
    /// The parser; read its results here.
    private(set) var parser = ResponseHeaderParser()
    private let block: UnsafeMutablePointer<ccurl_header_block>

    /// `nil` without memory for the block.
    init?(limit: Int = Transfer.maxHeaderBytes) {
        guard let block = ccurl_header_block_create(max(limit, 0), nil, nil) else { return nil }
        self.block = block
    }

    deinit { ccurl_header_block_destroy(block) }

    /// Feeds one raw line (with its line end) through the block, as curl's header callback does.
    func consume(_ line: UnsafeRawBufferPointer) -> ResponseHeaderParser.Event {
        guard let base = line.baseAddress else { return .none }
        let event = ccurl_header_block_consume(block, base.assumingMemoryBound(to: CChar.self), line.count)
        return parser.handle(event, line: line, block: block)
    }

    /// The completed head for `url`.
    func head(url: URL) -> ResponseHead { parser.head(url: url) }
}

/// `string` with ASCII letters lowered (other bytes kept).
func asciiLowercased(_ string: String) -> String {
    String(decoding: string.utf8.map(asciiLower), as: UTF8.self)
}

@inline(__always) func asciiLower(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
}
