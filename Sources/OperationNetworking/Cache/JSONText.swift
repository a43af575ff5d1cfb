import Foundation

/// The JSON the cache writes for every stored entry — an object of strings (the header fields) and the
/// entry's metadata — written directly rather than through `JSONEncoder`, whose generic encoding costs
/// more than the rest of a store. What it writes is read back by `JSONDecoder`, as before.
///
/// - Threading: a value; pure.
struct JSONText {
    private(set) var bytes: [UInt8] = []

    init() {
        bytes.reserveCapacity(256)
    }

    var data: Data { Data(bytes) }

    /// A JSON object of `fields`.
    static func object(_ fields: [String: String]) -> Data {
        var text = JSONText()
        text.appendObject(fields)
        return text.data
    }

    mutating func openObject() { bytes.append(UInt8(ascii: "{")) }
    mutating func closeObject() { bytes.append(UInt8(ascii: "}")) }

    mutating func appendObject(_ fields: [String: String]) {
        openObject()
        var first = true
        for (name, value) in fields {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            appendString(name)
            bytes.append(UInt8(ascii: ":"))
            appendString(value)
        }
        closeObject()
    }

    /// `"name":` inside an object, after a comma unless `first`.
    mutating func appendKey(_ name: StaticString, first: Bool = false) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(contentsOf: "\":".utf8)
    }

    /// A string with `"`, `\` and the control characters escaped (RFC 8259 §7); other bytes as UTF-8.
    /// Text that needs no escape (most of it: field values, URLs, the trust identity) is appended whole.
    mutating func appendString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            guard utf8.contains(where: Self.needsEscape) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                case 0..<0x20:
                    bytes.append(contentsOf: "\\u00".utf8)
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0xF)])
                default:
                    bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// A finite number as Swift writes it (the shortest text that reads back as the same `Double`);
    /// false, writing nothing, for an infinity or NaN, which JSON cannot hold.
    mutating func appendNumber(_ number: Double) -> Bool {
        guard number.isFinite else { return false }
        bytes.append(contentsOf: number.description.utf8)
        return true
    }

    mutating func appendInteger(_ number: Int) {
        bytes.append(contentsOf: String(number).utf8)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

extension CacheEntryMetadata {
    /// The metadata as JSON, as `JSONEncoder` writes it for `Codable` (the same keys, dates as seconds
    /// since the reference date): `JSONDecoder` reads it back. Falls back to `JSONEncoder` for a date
    /// JSON cannot hold as a number.
    func encodedJSON() throws -> Data {
        var text = JSONText()
        text.openObject()
        text.appendKey("version", first: true)
        text.appendInteger(version)
        text.appendKey("requestURL")
        text.appendString(requestURL)
        text.appendKey("varyingRequestHeaders")
        text.appendObject(varyingRequestHeaders)
        text.appendKey("requestTime")
        guard text.appendNumber(requestTime.timeIntervalSinceReferenceDate) else { return try JSONEncoder().encode(self) }
        text.appendKey("responseTime")
        guard text.appendNumber(responseTime.timeIntervalSinceReferenceDate) else { return try JSONEncoder().encode(self) }
        if let trust {
            text.appendKey("trust")
            text.appendString(trust)
        }
        text.closeObject()
        return text.data
    }
}
