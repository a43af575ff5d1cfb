import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns the header lines curl hands to the header callback into `ResponseHead`s.
///
/// curl calls back once per line, status line included, and once with the empty line that ends a
/// block. Informational blocks (`100 Continue`, `103 Early Hints`) are recognised and dropped. A field
/// line is appended, as received, to one array; the block is split into fields when it ends. Lines
/// that come after a final block (trailers) extend it, and their end splits it again.
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
        /// The block would pass `limit` bytes with this line.
        case tooLarge
    }

    /// Largest header block accepted, in bytes, its status line included.
    let limit: Int
    /// Status code of the block being parsed (0 before its status line).
    private(set) var statusCode = 0
    /// `"HTTP/1.1"`, `"HTTP/2"`…, from the status line.
    private(set) var httpVersion = "HTTP/1.1"
    /// The block's lines after its status line, as received (line ends included).
    private var raw: [UInt8] = []
    /// Bytes of the block so far, status line included (counted as if it had ended in CRLF).
    private var byteCount = 0
    /// The fields as of the block's last end.
    private var bytes: [UInt8] = []
    private var spans: [FieldSpan] = []

    init(limit: Int = Transfer.maxHeaderBytes) {
        self.limit = limit
    }

    /// Takes one line as curl hands it over (with its line end) and says what it completed.
    mutating func consume(_ line: UnsafeRawBufferPointer) -> Event {
        // Counted before anything else, so that no line, a status line included, passes the limit.
        guard line.count <= limit - min(byteCount, limit) else { return .tooLarge }
        byteCount += line.count
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        if end == 0 { return finishBlock() }
        if end >= 5, line[0..<5].elementsEqual("HTTP/".utf8) {
            startBlock(UnsafeRawBufferPointer(rebasing: line[0..<end]))
            return .none
        }
        raw.append(contentsOf: line)
        return .none
    }

    /// The value of the first field named `name` in the last block that ended.
    func value(for name: String) -> String? {
        HeaderBytes.first(named: name, in: bytes, spans).map { HeaderBytes.text(bytes, $0.valueStart, $0.valueEnd) }
    }

    /// Whether the last block that ended has a field named `name`.
    func hasField(_ name: String) -> Bool {
        HeaderBytes.first(named: name, in: bytes, spans) != nil
    }

    /// The completed head for `url`.
    func head(url: URL) -> ResponseHead {
        ResponseHead(url: url, statusCode: statusCode, httpVersion: httpVersion, bytes: bytes, spans: spans)
    }

    /// A status line (`line`, without its line end) begins a block: the version, the code, and a
    /// count of its size that starts afresh.
    private mutating func startBlock(_ line: UnsafeRawBufferPointer) {
        var index = 0
        while index < line.count, line[index] != 0x20 { index += 1 }
        httpVersion = String(decoding: line[0..<index], as: UTF8.self)
        while index < line.count, line[index] == 0x20 { index += 1 }
        var code = 0, digits = 0
        while index < line.count, digits < 3, (0x30...0x39).contains(line[index]) {
            code = code * 10 + Int(line[index] - 0x30)
            index += 1
            digits += 1
        }
        statusCode = digits == 3 ? code : 0
        clearFields()
        byteCount = line.count + 2
    }

    /// A block ended: an informational one is dropped; a final one is split into its fields.
    private mutating func finishBlock() -> Event {
        byteCount = 0
        if (100..<200).contains(statusCode) && statusCode != 101 {
            statusCode = 0
            clearFields()
            return .informational
        }
        (bytes, spans) = ResponseHeaderParser.split(raw)
        return .headComplete
    }

    private mutating func clearFields() {
        raw.removeAll(keepingCapacity: true)
        bytes = []
        spans = []
    }

    /// Splits a block's lines into fields, copied back to back: each from its name's first byte to
    /// its value's last, spaces and tabs around both trimmed. A line without a colon or without a
    /// name is skipped; a line that begins with a space or tab (obsolete folding) extends the value
    /// of the field before it, trimmed, after one space.
    static func split(_ raw: [UInt8]) -> (bytes: [UInt8], spans: [FieldSpan]) {
        var bytes: [UInt8] = []
        var spans: [FieldSpan] = []
        var start = 0
        while start < raw.count {
            let lineEnd = raw[start...].firstIndex(of: 0x0A) ?? raw.count
            defer { start = lineEnd + 1 }
            var end = lineEnd
            while end > start, raw[end - 1] == 0x0D { end -= 1 }
            guard end > start else { continue }
            if raw[start] == 0x20 || raw[start] == 0x09 {
                guard !spans.isEmpty else { continue }
                let (from, to) = trimmed(raw, start, end)
                bytes.append(0x20)
                bytes.append(contentsOf: raw[from..<to])
                spans[spans.count - 1].valueEnd = Int32(bytes.count)
                continue
            }
            guard let colon = raw[start..<end].firstIndex(of: 0x3A) else { continue }
            let (nameStart, nameEnd) = trimmed(raw, start, colon)
            let (valueStart, valueEnd) = trimmed(raw, colon + 1, end)
            guard nameEnd > nameStart else { continue }
            let at = bytes.count
            bytes.append(contentsOf: raw[nameStart..<valueEnd])
            spans.append(FieldSpan(nameStart: Int32(at), nameEnd: Int32(at + nameEnd - nameStart),
                                   valueStart: Int32(at + valueStart - nameStart), valueEnd: Int32(bytes.count)))
        }
        return (bytes, spans)
    }

    private static func trimmed(_ line: [UInt8], _ start: Int, _ end: Int) -> (Int, Int) {
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

func asciiLower(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
}
