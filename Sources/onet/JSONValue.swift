import Foundation

/// A JSON value that keeps what httpie keeps: the order of an object's members and repeated names
/// (`{"a": 1, "a": 2}` stays so), which `JSONSerialization`'s dictionaries lose.
indirect enum JSONValue: Equatable {
    /// Members in order; a name may repeat.
    case object([Member])
    /// Elements in order.
    case array([JSONValue])
    /// A string.
    case string(String)
    /// A number, as the text httpie (Python's `json.dumps`) writes it.
    case number(String)
    /// `true` or `false`.
    case bool(Bool)
    /// `null`.
    case null

    /// One member of an object.
    struct Member: Equatable {
        /// The member's name.
        var name: String
        /// The member's value.
        var value: JSONValue
    }

    /// The JSON type's name, as httpie's nested-JSON errors say it.
    var typeName: String {
        switch self {
        case .object: return "object"
        case .array: return "array"
        case .string: return "string"
        case .number: return "number"
        case .bool: return "bool"
        case .null: return "NoneType"
        }
    }

    /// The text httpie sends: Python's `json.dumps` defaults (`", "` and `": "` separators, every
    /// character outside printable ASCII escaped as `\uXXXX`).
    var httpieText: String {
        var text = ""
        write(to: &text)
        return text
    }

    private func write(to text: inout String) {
        switch self {
        case .object(let members):
            text += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { text += ", " }
                JSONValue.writeString(member.name, to: &text)
                text += ": "
                member.value.write(to: &text)
            }
            text += "}"
        case .array(let elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += ", " }
                element.write(to: &text)
            }
            text += "]"
        case .string(let string): JSONValue.writeString(string, to: &text)
        case .number(let literal): text += literal
        case .bool(let value): text += value ? "true" : "false"
        case .null: text += "null"
        }
    }

    /// A string in quotes, escaped as `json.dumps` does with `ensure_ascii` (astral characters as a
    /// surrogate pair).
    private static func writeString(_ string: String, to text: inout String) {
        text += "\""
        for unit in string.utf16 {
            switch unit {
            case 0x22: text += "\\\""
            case 0x5C: text += "\\\\"
            case 0x0A: text += "\\n"
            case 0x0D: text += "\\r"
            case 0x09: text += "\\t"
            case 0x08: text += "\\b"
            case 0x0C: text += "\\f"
            case 0x20...0x7E: text.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default: text += "\\u" + String(repeating: "0", count: 4 - String(unit, radix: 16).count) + String(unit, radix: 16)
            }
        }
        text += "\""
    }

    /// The text of a floating-point number as Python's `repr` writes it: the shortest digits that
    /// read back as the same value, positional from 1e-4 up to (not including) 1e16, otherwise with
    /// an exponent of at least two digits (`1e+16`, `1.5e-05`).
    static func pythonFloatText(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        if value == 0 { return value.sign == .minus ? "-0.0" : "0.0" }
        // Swift's description has the same shortest digits; only where it switches notation differs.
        var text = "\(abs(value))"
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(text[text.index(after: e)...]) ?? 0
            text = String(text[..<e])
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let integral = String(parts[0]), fraction = parts.count > 1 ? String(parts[1]) : ""
        var digits = integral + fraction
        var point = integral.count + exponent   // digits[..<point] is the integral part
        while digits.hasPrefix("0") && digits.count > 1 {
            digits.removeFirst()
            point -= 1
        }
        while digits.hasSuffix("0") && digits.count > 1 { digits.removeLast() }
        let sign = value < 0 ? "-" : ""
        if point <= -4 || point > 16 {
            let mantissa = digits.count > 1 ? "\(digits.first ?? "0")." + digits.dropFirst() : digits
            let shown = point - 1
            return sign + mantissa + "e" + (shown < 0 ? "-" : "+") + (abs(shown) < 10 ? "0" : "") + "\(abs(shown))"
        }
        if point <= 0 { return sign + "0." + String(repeating: "0", count: -point) + digits }
        if point >= digits.count { return sign + digits + String(repeating: "0", count: point - digits.count) + ".0" }
        return sign + digits.prefix(point) + "." + digits.dropFirst(point)
    }
}

/// Reads JSON text into a `JSONValue` the way httpie's `:=` items do (Python's `json.loads`): member
/// order and repeated names kept, `NaN` and `Infinity` accepted, control characters in strings refused.
struct JSONReader {
    /// Why a text is not JSON, with the character offset where reading stopped.
    struct Failure: Error, CustomStringConvertible {
        /// What was expected or wrong.
        let reason: String
        /// The offset, in characters, from the start of the text.
        let offset: Int
        var description: String { "\(reason) (char \(offset))" }
    }

    private let scalars: [Unicode.Scalar]
    private var position = 0
    /// How deep arrays and objects may nest: hostile input must not exhaust the stack.
    private static let maximumDepth = 512

    /// Parses `text`, which must hold exactly one JSON value (white space around it allowed).
    static func parse(_ text: String) throws -> JSONValue {
        var reader = JSONReader(scalars: Array(text.unicodeScalars))
        reader.skipSpace()
        let value = try reader.readValue(depth: 0)
        reader.skipSpace()
        guard reader.position == reader.scalars.count else { throw reader.failure("Extra data") }
        return value
    }

    private init(scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    private func failure(_ reason: String) -> Failure { Failure(reason: reason, offset: position) }

    private var current: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }

    private mutating func skipSpace() {
        while let scalar = current, scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" { position += 1 }
    }

    private mutating func readValue(depth: Int) throws -> JSONValue {
        guard depth < JSONReader.maximumDepth else { throw failure("Nested too deeply") }
        switch current {
        case "{": return try readObject(depth: depth)
        case "[": return try readArray(depth: depth)
        case "\"": return .string(try readString())
        case "t" where take("true"): return .bool(true)
        case "f" where take("false"): return .bool(false)
        case "n" where take("null"): return .null
        case "N" where take("NaN"): return .number("NaN")
        case "I" where take("Infinity"): return .number("Infinity")
        case "-" where take("-Infinity"): return .number("-Infinity")
        default: return try readNumber()
        }
    }

    private mutating func take(_ word: String) -> Bool {
        let wanted = Array(word.unicodeScalars)
        guard position + wanted.count <= scalars.count, Array(scalars[position..<position + wanted.count]) == wanted else {
            return false
        }
        position += wanted.count
        return true
    }

    private mutating func readObject(depth: Int) throws -> JSONValue {
        position += 1
        var members: [JSONValue.Member] = []
        skipSpace()
        if current == "}" {
            position += 1
            return .object(members)
        }
        while true {
            skipSpace()
            guard current == "\"" else { throw failure("Expecting property name enclosed in double quotes") }
            let name = try readString()
            skipSpace()
            guard current == ":" else { throw failure("Expecting ':' delimiter") }
            position += 1
            skipSpace()
            members.append(JSONValue.Member(name: name, value: try readValue(depth: depth + 1)))
            skipSpace()
            switch current {
            case ",": position += 1
            case "}":
                position += 1
                return .object(members)
            default: throw failure("Expecting ',' delimiter")
            }
        }
    }

    private mutating func readArray(depth: Int) throws -> JSONValue {
        position += 1
        var elements: [JSONValue] = []
        skipSpace()
        if current == "]" {
            position += 1
            return .array(elements)
        }
        while true {
            skipSpace()
            elements.append(try readValue(depth: depth + 1))
            skipSpace()
            switch current {
            case ",": position += 1
            case "]":
                position += 1
                return .array(elements)
            default: throw failure("Expecting ',' delimiter")
            }
        }
    }

    private mutating func readString() throws -> String {
        position += 1
        var units: [UInt16] = []
        while let scalar = current {
            position += 1
            switch scalar {
            case "\"": return String(decoding: units, as: UTF16.self)
            case "\\": units.append(contentsOf: try readEscape())
            default:
                guard scalar.value >= 0x20 else { throw failure("Invalid control character") }
                units.append(contentsOf: Array(String(scalar).utf16))
            }
        }
        throw failure("Unterminated string")
    }

    private mutating func readEscape() throws -> [UInt16] {
        guard let scalar = current else { throw failure("Unterminated string") }
        position += 1
        switch scalar {
        case "\"": return [0x22]
        case "\\": return [0x5C]
        case "/": return [0x2F]
        case "b": return [0x08]
        case "f": return [0x0C]
        case "n": return [0x0A]
        case "r": return [0x0D]
        case "t": return [0x09]
        case "u":
            guard position + 4 <= scalars.count,
                  let unit = UInt16(String(String.UnicodeScalarView(scalars[position..<position + 4])), radix: 16) else {
                throw failure("Invalid \\uXXXX escape")
            }
            position += 4
            return [unit]   // a lone surrogate decodes as U+FFFD, as Python's encoder would refuse to send it
        default:
            position -= 1
            throw failure("Invalid \\escape")
        }
    }

    private mutating func readNumber() throws -> JSONValue {
        let start = position
        if current == "-" { position += 1 }
        guard let first = current, ("0"..."9").contains(first) else {
            position = start
            throw failure("Expecting value")
        }
        if first == "0" {
            position += 1
        } else {
            skipDigits()
        }
        var isFloat = false
        if current == ".", position + 1 < scalars.count, ("0"..."9").contains(scalars[position + 1]) {
            isFloat = true
            position += 1
            skipDigits()
        }
        if current == "e" || current == "E" {
            let mark = position
            position += 1
            if current == "+" || current == "-" { position += 1 }
            if let digit = current, ("0"..."9").contains(digit) {
                isFloat = true
                skipDigits()
            } else {
                position = mark
            }
        }
        let literal = String(String.UnicodeScalarView(scalars[start..<position]))
        guard isFloat else {
            // An integer keeps all its digits (Python's are unbounded); minus zero is zero.
            return .number(literal == "-0" ? "0" : literal)
        }
        guard let value = Double(literal) else { throw failure("Expecting value") }
        return .number(JSONValue.pythonFloatText(value))
    }

    private mutating func skipDigits() {
        while let scalar = current, ("0"..."9").contains(scalar) { position += 1 }
    }
}
