/// RFC 9110's `token` (§5.6.2): what a method (§9.1) and a field name (§5.1) are made of. Anything
/// else in those places would change the request's head: a space or CR LF ends the request line or
/// a header line early and lets the rest be read as lines of their own.
enum HTTPToken {
    /// Whether `string` is one or more `tchar`: ASCII letters and digits and ``!#$%&'*+-.^_`|~``.
    static func isToken(_ string: String) -> Bool {
        !string.isEmpty && string.utf8.allSatisfy(isTokenCharacter)
    }

    /// Whether `byte` is a `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "a")...UInt8(ascii: "z"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
