import Foundation

/// AFNetworking 2.7's query string and form encoding.
///
/// Dictionaries flatten to `key[sub]`, arrays to `key[]`, sets repeat the key; dictionary keys and set
/// members are sorted; `NSNull` renders the key alone. Keys and values are percent-encoded as UTF-8,
/// leaving only `A–Z a–z 0–9 - . _ ~ / ?` as they are. Numbers are written as AFN's `NSNumber`
/// description wrote them (see `render`).
/// - Threading: pure functions.
enum QueryString {
    /// The encoded string for `parameters` (usually a dictionary). Throws for a value that has no
    /// text form AFN could have sent (a NaN or infinite number), and `nestingTooDeep` (failing URL
    /// `url`) for parameters nested deeper than `HTTPRequestSerializer.maximumParameterNestingDepth`.
    static func encode(_ parameters: Any, url: URL? = nil) throws -> String {
        try ParameterNesting.validate(parameters, url: url)
        return try pairs(key: nil, value: parameters).map { pair in
            guard let value = pair.value else { return escape(pair.key ?? "") }
            return escape(pair.key ?? "") + "=" + escape(try render(value))
        }.joined(separator: "&")
    }

    /// The flattened `(name, value)` pairs, names unescaped and values as given (`nil` for `NSNull`):
    /// what multipart form fields are made of. Throws `nestingTooDeep` as `encode` does.
    static func flatten(_ parameters: Any, url: URL? = nil) throws -> [(name: String, value: Any?)] {
        try ParameterNesting.validate(parameters, url: url)
        return pairs(key: nil, value: parameters).map { ($0.key ?? "", $0.value) }
    }

    /// Percent-encodes with AFN's allowed set; a whole UTF-8 string at once, so no character is split.
    static func escape(_ string: String) -> String {
        var output = [UInt8]()
        output.reserveCapacity(string.utf8.count)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in string.utf8 {
            if isAllowed(byte) {
                output.append(byte)
            } else {
                output.append(0x25)
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true          // 0-9 A-Z a-z
        case 0x2D, 0x2E, 0x5F, 0x7E, 0x2F, 0x3F: return true             // - . _ ~ / ?
        default: return false
        }
    }

    private struct Pair {
        var key: String?
        var value: Any?
    }

    /// Flattens one value under `key` (AFN's `AFQueryStringPairsFromKeyAndValue`). Recursive, one
    /// level per container: reached only through `encode` and `flatten`, whose `ParameterNesting`
    /// check counts every container this descends into, so the recursion stays within the limit.
    private static func pairs(key: String?, value: Any) -> [Pair] {
        if let dictionary = dictionaryEntries(value) {
            return dictionary.sorted { $0.0 < $1.0 }.flatMap { name, nested in
                pairs(key: key.map { "\($0)[\(name)]" } ?? name, value: nested)
            }
        }
        if let array = value as? [Any] {
            return array.flatMap { pairs(key: (key ?? "") + "[]", value: $0) }
        }
        if let set = value as? Set<AnyHashable> {
            return set.map { ($0, try? render($0.base)) }.sorted { $0.1 ?? "" < $1.1 ?? "" }
                .flatMap { pairs(key: key, value: $0.0.base) }
        }
        if value is NSNull { return [Pair(key: key, value: nil)] }
        return [Pair(key: key, value: value)]
    }

    private static func dictionaryEntries(_ value: Any) -> [(String, Any)]? {
        if let dictionary = value as? [String: Any] { return dictionary.map { ($0.key, $0.value) } }
        if let dictionary = value as? [AnyHashable: Any] {
            return dictionary.map { ((try? render($0.key.base)) ?? "", $0.value) }
        }
        return nil
    }

    /// A value's text as AFN's `description` gave it. Numbers follow `NSNumber`: booleans `1`/`0`,
    /// integers exactly, doubles as `%.16g` and floats as `%.7g` (so `3.0` is `3` and `1.5` is `1.5`:
    /// a Swift literal `["count": 3, "ratio": 1.5]` is a `[String: Double]`, yet AFN sent `count=3`).
    /// Throws `unencodableParameters` for NaN and infinities, which have no form a server can read.
    static func render(_ value: Any) throws -> String {
        switch value {
        case let string as String: return string
        case let url as URL: return url.absoluteString
        case let number as NSNumber where Swift.type(of: value) is NSNumber.Type:
            return try render(number)
        case let bool as Bool: return bool ? "1" : "0"
        case let double as Double: return try format(double, digits: 16)
        case let float as Float: return try format(Double(float), digits: 7)
        case let integer as any BinaryInteger: return String(describing: integer)
        case let decimal as Decimal:
            guard decimal.isFinite else { throw nonFinite(decimal.description) }
            return decimal.description
        default: return String(describing: value)
        }
    }

    /// An `NSNumber` object (from `JSONSerialization`, say), by the C type it holds.
    private static func render(_ number: NSNumber) throws -> String {
        switch String(cString: number.objCType) {
        case "c", "B": return number.boolValue ? "1" : "0"   // how NSNumber holds a Bool (and described it)
        case "f": return try format(number.doubleValue, digits: 7)
        case "d": return try format(number.doubleValue, digits: 16)
        case "Q", "L", "I", "S", "C": return String(number.uint64Value)
        default: return String(number.int64Value)
        }
    }

    private static func format(_ value: Double, digits: Int) throws -> String {
        guard value.isFinite else { throw nonFinite(String(describing: value)) }
        return String(format: "%.\(digits)g", value)
    }

    private static func nonFinite(_ text: String) -> NSError {
        LibraryError.requestSerialization(.unencodableParameters,
                                          "The parameter value \(text) is not a finite number and cannot be encoded.")
    }
}
