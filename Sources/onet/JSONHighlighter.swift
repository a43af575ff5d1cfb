import Foundation

/// Re-indents JSON text for a terminal, colouring keys, strings, numbers and literals with ANSI
/// escapes. It works on the text, not on a parsed object, so numbers keep their exact digits and keys
/// their order; callers check first that the text is valid JSON.
struct JSONHighlighter {
    /// Whether to emit colour escapes (only on a terminal).
    var colours: Bool
    /// Spaces per level.
    var indentWidth = 4

    private static let keyColour = "\u{1B}[34m"      // blue
    private static let stringColour = "\u{1B}[32m"   // green
    private static let numberColour = "\u{1B}[36m"   // cyan
    private static let literalColour = "\u{1B}[35m"  // magenta: true, false, null
    private static let reset = "\u{1B}[0m"

    /// The indented (and coloured) text of `data`, ending in a newline.
    func format(_ data: Data) -> String {
        let bytes = [UInt8](data)
        var out = ""
        var depth = 0
        var index = 0
        var expectingKey = false   // inside an object, before the key's colon
        var stack: [UInt8] = []    // the open brackets
        func newline() { out += "\n" + String(repeating: " ", count: depth * indentWidth) }
        func painted(_ text: String, _ colour: String) -> String { colours ? colour + text + JSONHighlighter.reset : text }

        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                index += 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let closing: UInt8 = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                let next = JSONHighlighter.nextSignificant(bytes, after: index)
                if next == closing {   // {} and [] stay on one line
                    out += byte == UInt8(ascii: "{") ? "{}" : "[]"
                    index = (JSONHighlighter.position(of: closing, in: bytes, after: index) ?? index) + 1
                    continue
                }
                out += String(UnicodeScalar(byte))
                stack.append(byte)
                depth += 1
                expectingKey = byte == UInt8(ascii: "{")
                newline()
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
                _ = stack.popLast()
                newline()
                out += String(UnicodeScalar(byte))
                index += 1
            case UInt8(ascii: ","):
                out += ","
                expectingKey = stack.last == UInt8(ascii: "{")
                newline()
                index += 1
            case UInt8(ascii: ":"):
                out += ": "
                expectingKey = false
                index += 1
            case UInt8(ascii: "\""):
                let end = JSONHighlighter.endOfString(bytes, from: index)
                let text = String(decoding: bytes[index..<end], as: UTF8.self)
                out += painted(text, expectingKey ? JSONHighlighter.keyColour : JSONHighlighter.stringColour)
                index = end
            default:
                var end = index
                while end < bytes.count, !JSONHighlighter.isStructural(bytes[end]) { end += 1 }
                let text = String(decoding: bytes[index..<end], as: UTF8.self)
                let isLiteral = text == "true" || text == "false" || text == "null"
                out += painted(text, isLiteral ? JSONHighlighter.literalColour : JSONHighlighter.numberColour)
                index = max(end, index + 1)
            }
        }
        return out + "\n"
    }

    /// The index just past the string that starts at `start` (a quote), honouring backslash escapes.
    private static func endOfString(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start + 1
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\\") { index += 2; continue }
            if bytes[index] == UInt8(ascii: "\"") { return index + 1 }
            index += 1
        }
        return bytes.count
    }

    /// Whether `byte` ends a number or literal.
    private static func isStructural(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ":"), UInt8(ascii: " "),
             UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"), UInt8(ascii: "\""):
            return true
        default:
            return false
        }
    }

    /// The first byte after `index` that is not white space.
    private static func nextSignificant(_ bytes: [UInt8], after index: Int) -> UInt8? {
        position(where: { ![UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t")].contains($0) },
                 in: bytes, after: index).map { bytes[$0] }
    }

    /// The index of the first `byte` after `index`.
    private static func position(of byte: UInt8, in bytes: [UInt8], after index: Int) -> Int? {
        position(where: { $0 == byte }, in: bytes, after: index)
    }

    /// The index of the first byte after `index` that satisfies `predicate`.
    private static func position(where predicate: (UInt8) -> Bool, in bytes: [UInt8], after index: Int) -> Int? {
        var cursor = index + 1
        while cursor < bytes.count {
            if predicate(bytes[cursor]) { return cursor }
            cursor += 1
        }
        return nil
    }
}
