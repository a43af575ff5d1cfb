import Foundation

/// AFNetworking 2.7's query string and form encoding (API.md §5, afn2-api.md §6.6).
///
/// Dictionaries flatten to `key[sub]`, arrays to `key[]`, sets repeat the key; dictionary keys and set
/// members are sorted; `NSNull` renders the key alone. Keys and values are percent-encoded as UTF-8,
/// leaving only `A–Z a–z 0–9 - . _ ~ / ?` as they are.
/// - Threading: pure functions.
enum QueryString {
    /// The encoded string for `parameters` (usually a dictionary).
    static func encode(_ parameters: Any) -> String {
        pairs(key: nil, value: parameters).map { pair in
            guard let value = pair.value.flatMap(render) else { return escape(pair.key ?? "") }
            return escape(pair.key ?? "") + "=" + escape(value)
        }.joined(separator: "&")
    }

    /// The flattened `(name, value)` pairs, names unescaped and values as given (`nil` for `NSNull`):
    /// what multipart form fields are made of.
    static func flatten(_ parameters: Any) -> [(name: String, value: Any?)] {
        pairs(key: nil, value: parameters).map { ($0.key ?? "", $0.value) }
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

    /// Flattens one value under `key` (AFN's `AFQueryStringPairsFromKeyAndValue`).
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
            return set.map { ($0, render($0.base)) }.sorted { $0.1 ?? "" < $1.1 ?? "" }
                .flatMap { pairs(key: key, value: $0.0.base) }
        }
        if value is NSNull { return [Pair(key: key, value: nil)] }
        return [Pair(key: key, value: value)]
    }

    private static func dictionaryEntries(_ value: Any) -> [(String, Any)]? {
        if let dictionary = value as? [String: Any] { return dictionary.map { ($0.key, $0.value) } }
        if let dictionary = value as? [AnyHashable: Any] {
            return dictionary.map { (render($0.key.base) ?? "", $0.value) }
        }
        return nil
    }

    /// A value's text as AFN's `description` gave it (booleans as `1`/`0`, like `NSNumber`).
    static func render(_ value: Any) -> String? {
        switch value {
        case let bool as Bool: return bool ? "1" : "0"
        case let string as String: return string
        case let url as URL: return url.absoluteString
        default: return String(describing: value)
        }
    }
}
