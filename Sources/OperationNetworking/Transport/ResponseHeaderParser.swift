import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Collects the header lines curl hands to the header callback into a `ResponseHead`.
///
/// curl calls back once per line, status line included, and once with the empty line that ends a
/// block. Informational blocks (`100 Continue`, `103 Early Hints`) are recognised and dropped.
/// Lines are split at the byte level and copied into one growing array: this runs on the network
/// thread for every header of every response, so it makes no `String`s.
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
    /// The fields of the block so far, each from its name's first byte to its value's last.
    private var bytes: [UInt8] = []
    /// Each field's place in `bytes`.
    private var spans: [FieldSpan] = []
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
        } else if line[0] == 0x20 || line[0] == 0x09 {
            // Obsolete line folding: continues the previous value, which is the last thing stored.
            guard !spans.isEmpty else { return .none }
            let (start, stop) = trimmed(line, 0, end)
            bytes.append(0x20)
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[start..<stop]))
            spans[spans.count - 1].valueEnd = Int32(bytes.count)
        } else if let base = line.baseAddress, let found = memchr(base, 0x3A, end) {
            let colon = base.distance(to: UnsafeRawPointer(found))
            let (nameStart, nameEnd) = trimmed(line, 0, colon)
            let (valueStart, valueEnd) = trimmed(line, colon + 1, end)
            if nameEnd > nameStart {
                store(line: UnsafeRawBufferPointer(start: base + nameStart, count: valueEnd - nameStart),
                      nameLength: nameEnd - nameStart, valueOffset: valueStart - nameStart)
            }
        }
        return .none
    }

    /// Appends one field to the storage: `line` runs from the name's first byte to the value's last,
    /// copied whole (separator included) in one block rather than as two pieces.
    private mutating func store(line: UnsafeRawBufferPointer, nameLength: Int, valueOffset: Int) {
        if spans.capacity == 0 {
            bytes.reserveCapacity(512)
            spans.reserveCapacity(16)
        }
        let start = bytes.count
        bytes.append(contentsOf: line.assumingMemoryBound(to: UInt8.self))
        spans.append(FieldSpan(nameStart: Int32(start), nameEnd: Int32(start + nameLength),
                               valueStart: Int32(start + valueOffset), valueEnd: Int32(bytes.count)))
    }

    /// The value of the first field named `name` in the block so far.
    func value(for name: String) -> String? {
        HeaderBytes.firstValue(named: name, in: bytes, spans: spans).map { HeaderBytes.text(bytes, $0.valueStart, $0.valueEnd) }
    }

    /// Whether the block so far has a field named `name`.
    func hasField(_ name: String) -> Bool {
        HeaderBytes.firstValue(named: name, in: bytes, spans: spans) != nil
    }

    /// The completed head for `url`.
    func head(url: URL) -> ResponseHead {
        ResponseHead(url: url, statusCode: statusCode, httpVersion: httpVersion, bytes: bytes, spans: spans)
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
        bytes.removeAll(keepingCapacity: true)
        spans.removeAll(keepingCapacity: true)
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
            bytes.removeAll(keepingCapacity: true)
            spans.removeAll(keepingCapacity: true)
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
}

/// `string` with ASCII letters lowered (other bytes kept).
func asciiLowercased(_ string: String) -> String {
    String(decoding: string.utf8.map(asciiLower), as: UTF8.self)
}

@inline(__always) func asciiLower(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
}
