import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns the header lines curl hands to the header callback into `ResponseHead`s.
///
/// curl calls back once per line, status line included, and once with the empty line that ends a
/// block. Informational blocks (`100 Continue`, `103 Early Hints`) are recognised and dropped. Each
/// field line is split as it arrives and its name and value copied, trimmed, to the block's storage;
/// the block's end makes them the fields the parser answers for. Lines that come after a final block
/// (trailers) extend it, and their end makes the extended block the answer.
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
    /// Bytes of the block so far, status line included (counted as if it had ended in CRLF).
    private var byteCount = 0
    /// The fields of the block being read: names and values back to back, and where each lies.
    private var building = Fields()
    /// The fields as of the block's last end.
    private var ended = Fields()

    /// A block's fields as `ResponseHead` keeps them.
    private struct Fields {
        var bytes: [UInt8] = []
        var spans: [FieldSpan] = []

        /// Room for a typical head's fields, so that one grows its storage once, not field by field.
        mutating func reserveTypicalSize() {
            bytes.reserveCapacity(512)
            spans.reserveCapacity(16)
        }
    }

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
        let content = UnsafeRawBufferPointer(rebasing: line[0..<end])
        if content.isEmpty { return finishBlock() }
        if ResponseHeaderParser.isStatusLine(content) {
            startBlock(content)
        } else {
            addField(content)
        }
        return .none
    }

    /// The value of the first field named `name` in the last block that ended.
    func value(for name: String) -> String? {
        HeaderBytes.first(named: name, in: ended.bytes, ended.spans)
            .map { HeaderBytes.text(ended.bytes, $0.valueStart, $0.valueEnd) }
    }

    /// Whether the last block that ended has a field named `name`.
    func hasField(_ name: String) -> Bool {
        HeaderBytes.first(named: name, in: ended.bytes, ended.spans) != nil
    }

    /// The completed head for `url`.
    func head(url: URL) -> ResponseHead {
        ResponseHead(url: url, statusCode: statusCode, httpVersion: httpVersion, bytes: ended.bytes, spans: ended.spans)
    }

    /// Whether `line` begins with `HTTP/`.
    private static func isStatusLine(_ line: UnsafeRawBufferPointer) -> Bool {
        line.count >= 5 && line[0] == 0x48 && line[1] == 0x54 && line[2] == 0x54 && line[3] == 0x50 && line[4] == 0x2F
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

    /// A field line (`line`, without its line end): its name and value, spaces and tabs around both
    /// trimmed, are copied back to back. A line without a colon or without a name is skipped; a line
    /// that begins with a space or tab (obsolete folding) extends the value of the field before it,
    /// trimmed, after one space.
    private mutating func addField(_ line: UnsafeRawBufferPointer) {
        if line[0] == 0x20 || line[0] == 0x09 {
            guard !building.spans.isEmpty else { return }
            let (from, to) = ResponseHeaderParser.trimmed(line, 0, line.count)
            building.bytes.append(0x20)
            building.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[from..<to]))
            building.spans[building.spans.count - 1].valueEnd = Int32(building.bytes.count)
            return
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return }
        let (nameStart, nameEnd) = ResponseHeaderParser.trimmed(line, 0, colon)
        let (valueStart, valueEnd) = ResponseHeaderParser.trimmed(line, colon + 1, line.count)
        guard nameEnd > nameStart else { return }
        if building.spans.isEmpty { building.reserveTypicalSize() }
        let at = building.bytes.count
        building.bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[nameStart..<valueEnd]))
        building.spans.append(FieldSpan(nameStart: Int32(at), nameEnd: Int32(at + nameEnd - nameStart),
                                        valueStart: Int32(at + valueStart - nameStart), valueEnd: Int32(building.bytes.count)))
    }

    /// A block ended: an informational one is dropped; a final one becomes the answer.
    private mutating func finishBlock() -> Event {
        byteCount = 0
        if (100..<200).contains(statusCode) && statusCode != 101 {
            statusCode = 0
            clearFields()
            return .informational
        }
        ended = building
        return .headComplete
    }

    private mutating func clearFields() {
        building = Fields()
        ended = Fields()
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
    // Most names and directives are lowercase already: kept as they are, without a copy.
    var string = string
    let isLowercase = string.withUTF8 { utf8 in !utf8.contains { (0x41...0x5A).contains($0) } }
    return isLowercase ? string : String(decoding: string.utf8.map(asciiLower), as: UTF8.self)
}

/// Whether `one` and `other` are the same ignoring ASCII case (header names), without making a string.
func asciiCaseInsensitiveEquals(_ one: String, _ other: String) -> Bool {
    one.utf8.count == other.utf8.count && withUTF8Bytes(of: other) { asciiCaseInsensitiveEquals(one, $0) }
}

/// Whether `string` spells `bytes`, ignoring ASCII case.
func asciiCaseInsensitiveEquals(_ string: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    string.utf8.count == bytes.count && withUTF8Bytes(of: string) { utf8 in
        (0..<bytes.count).allSatisfy { asciiLower(utf8[$0]) == asciiLower(bytes[$0]) }
    }
}

/// Runs `body` with `string`'s UTF-8: in place for a native string, copied for another (bridged) one.
private func withUTF8Bytes<Result>(of string: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
    string.utf8.withContiguousStorageIfAvailable(body) ?? Array(string.utf8).withUnsafeBufferPointer(body)
}

func asciiLower(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
}
