import Foundation

/// Decides, before libxml2 sees a body, whether it could make the parser expand or load an entity.
///
/// Entities other than the five predefined ones (`&amp;` …) exist only when a document type
/// declaration (`<!DOCTYPE`) declares them or names an external subset, so a body that has neither
/// `<!DOCTYPE` nor `<!ENTITY` can expand nothing and load nothing. The search must see the characters
/// libxml2 will see, and libxml2 picks the encoding itself: a byte order mark, the first four bytes,
/// then the declaration's `encoding=`, to which it switches — including encodings such as UTF-7 in
/// which `<` is not the byte `3C`. So the body is decoded as libxml2 would decode it, and a body whose
/// encoding cannot be told for certain, or does not decode, is refused rather than left to libxml2.
/// - Threading: stateless.
enum XMLEntityGuard {
    /// Why a body is refused.
    enum Refusal: Error {
        /// The body has a document type declaration or an entity declaration.
        case declaresEntities
        /// The body's encoding is not one that can be read exactly as libxml2 reads it (the reason).
        case unreadableEncoding(String)

        /// The sentence the serialization error carries.
        var description: String {
            switch self {
            case .declaresEntities:
                return "XML with a document type declaration (<!DOCTYPE) or an entity declaration is not accepted."
            case .unreadableEncoding(let reason):
                return "The XML body's character encoding is not accepted: \(reason)."
            }
        }
    }

    /// Throws when `data` declares a DTD or an entity, or when its encoding cannot be read as libxml2 reads it.
    static func check(_ data: Data) throws(Refusal) {
        let text = try markupBytes(of: data)
        // A NUL is no XML character; a body that has one was not read in the encoding its author meant.
        if text.contains(0) { throw .unreadableEncoding("the body contains a NUL character") }
        if text.range(of: doctypeOpener) != nil || text.range(of: entityOpener) != nil { throw .declaresEntities }
    }

    private static let doctypeOpener = Data("<!DOCTYPE".utf8)
    private static let entityOpener = Data("<!ENTITY".utf8)

    // MARK: - Reading the body as libxml2 does

    /// How the first bytes lay a document out, as libxml2's encoding detection reads them.
    private enum Layout {
        /// UTF-8, or an 8-bit encoding the declaration names (`3C 3F 78 6D`, a UTF-8 byte order mark, or nothing recognisable).
        case asciiCompatible(utf8ByteOrderMark: Bool)
        /// UTF-16, detected from a byte order mark (skipped) or from `<?` in the first four bytes.
        case utf16(bigEndian: Bool, byteOrderMarkLength: Int)
        /// UCS-4 big-endian, detected from `00 00 00 3C`.
        case ucs4BigEndian
    }

    /// The layout libxml2 detects for `data`, or the refusal for a layout it reads in a way this cannot follow.
    private static func layout(of data: Data) throws(Refusal) -> Layout {
        let head = Array(data.prefix(4))
        func starts(_ bytes: [UInt8]) -> Bool { head.starts(with: bytes) }
        if starts([0x00, 0x00, 0x00, 0x3C]) { return .ucs4BigEndian }
        // UCS-4 little-endian and the unusual byte orders (corelibs' XMLDocument crashes on the former),
        // and EBCDIC: libxml2 would read them; this does not.
        if starts([0x3C, 0x00, 0x00, 0x00]) || starts([0x00, 0x00, 0x3C, 0x00]) || starts([0x00, 0x3C, 0x00, 0x00])
            || starts([0x4C, 0x6F, 0xA7, 0x94]) {
            throw .unreadableEncoding("UCS-4 other than big-endian, or EBCDIC")
        }
        if starts([0x3C, 0x00, 0x3F, 0x00]) { return .utf16(bigEndian: false, byteOrderMarkLength: 0) }
        if starts([0x00, 0x3C, 0x00, 0x3F]) { return .utf16(bigEndian: true, byteOrderMarkLength: 0) }
        if starts([0xEF, 0xBB, 0xBF]) { return .asciiCompatible(utf8ByteOrderMark: true) }
        if starts([0xFE, 0xFF]) { return .utf16(bigEndian: true, byteOrderMarkLength: 2) }
        if starts([0xFF, 0xFE]) { return .utf16(bigEndian: false, byteOrderMarkLength: 2) }
        return .asciiCompatible(utf8ByteOrderMark: false)
    }

    /// Bytes in which every ASCII character is one of the document's characters as libxml2 will read
    /// them: the body itself when its encoding keeps ASCII as it is, otherwise the body decoded to UTF-8.
    private static func markupBytes(of data: Data) throws(Refusal) -> Data {
        switch try layout(of: data) {
        case .asciiCompatible(let byteOrderMark):
            let declared = try declaredEncoding(in: data)
            let encoding = try asciiCompatibleEncoding(named: declared, afterUTF8ByteOrderMark: byteOrderMark)
            guard String(data: data, encoding: encoding) != nil else {
                throw .unreadableEncoding("the body does not decode as \(declared ?? "UTF-8")")
            }
            return data
        case .utf16(let bigEndian, let byteOrderMarkLength):
            let text = try decoded(data.dropFirst(byteOrderMarkLength),
                                   as: bigEndian ? .utf16BigEndian : .utf16LittleEndian, named: "UTF-16")
            let accepted: Set<String> = ["utf-16", "utf16", bigEndian ? "utf-16be" : "utf-16le"]
            try requireDeclaration(in: text, among: accepted, detected: "UTF-16")
            return text
        case .ucs4BigEndian:
            let text = try decoded(data, as: .utf32BigEndian, named: "UCS-4")
            try requireDeclaration(in: text, among: ["ucs-4", "ucs4", "iso-10646-ucs-4"], detected: "UCS-4")
            return text
        }
    }

    /// `bytes` decoded with `encoding`, as UTF-8.
    private static func decoded(_ bytes: Data, as encoding: String.Encoding, named name: String) throws(Refusal) -> Data {
        guard let text = String(data: bytes, encoding: encoding) else {
            throw .unreadableEncoding("the body does not decode as \(name)")
        }
        return Data(text.utf8)
    }

    /// The 8-bit encodings accepted in a declaration, by lowercased name: in each of them every byte
    /// below 0x80 is the ASCII character, so markup reads the same before and after libxml2's switch.
    private static let asciiCompatibleEncodings: [String: String.Encoding] = [
        "utf-8": .utf8, "utf8": .utf8, "us-ascii": .ascii, "ascii": .ascii,
        "iso-8859-1": .isoLatin1, "iso_8859-1": .isoLatin1, "latin1": .isoLatin1,
        "iso-8859-2": .isoLatin2, "iso_8859-2": .isoLatin2, "latin2": .isoLatin2,
        "windows-1250": .windowsCP1250, "windows-1251": .windowsCP1251, "windows-1252": .windowsCP1252,
        "windows-1253": .windowsCP1253, "windows-1254": .windowsCP1254,
    ]

    /// The encoding of an ASCII-compatible body that declares `name` (UTF-8 when it declares none).
    private static func asciiCompatibleEncoding(named name: String?,
                                                afterUTF8ByteOrderMark byteOrderMark: Bool) throws(Refusal) -> String.Encoding {
        guard let name else { return .utf8 }
        guard let encoding = asciiCompatibleEncodings[name.lowercased()] else {
            throw .unreadableEncoding("the declared encoding \(name) is not one of UTF-8, US-ASCII, ISO-8859-1, "
                                      + "ISO-8859-2, windows-1250 to windows-1254, UTF-16 or UCS-4")
        }
        guard !byteOrderMark || encoding == .utf8 else {
            throw .unreadableEncoding("a UTF-8 byte order mark with the declared encoding \(name)")
        }
        return encoding
    }

    /// Refuses a declaration naming an encoding other than the detected one (libxml2 would switch to
    /// it halfway through the document).
    private static func requireDeclaration(in text: Data, among accepted: Set<String>, detected: String) throws(Refusal) {
        guard let name = try declaredEncoding(in: text) else { return }
        guard accepted.contains(name.lowercased()) else {
            throw .unreadableEncoding("the body is \(detected) but declares \(name)")
        }
    }

    /// The `encoding` of the XML declaration that opens `text` (ASCII-compatible bytes), `nil` when
    /// there is no declaration or it names none. A declaration that mentions an encoding this cannot
    /// parse is refused.
    private static func declaredEncoding(in text: Data) throws(Refusal) -> String? {
        var bytes = text[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        let opener = Array("<?xml".utf8)
        // libxml2 takes `<?xml` for a declaration only when white space follows it.
        guard bytes.starts(with: opener), let next = bytes.dropFirst(opener.count).first, isSpace(next) else { return nil }
        guard let end = bytes.range(of: Data("?>".utf8)) else {
            throw .unreadableEncoding("the XML declaration is not closed")
        }
        let declaration = bytes[bytes.startIndex..<end.lowerBound]
        guard let keyword = declaration.range(of: Data("encoding".utf8)) else { return nil }
        var rest = declaration[keyword.upperBound...].drop(while: isSpace)
        guard rest.first == UInt8(ascii: "=") else { throw .unreadableEncoding("the encoding declaration is malformed") }
        rest = rest.dropFirst().drop(while: isSpace)
        guard let quote = rest.first, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else {
            throw .unreadableEncoding("the encoding declaration is malformed")
        }
        let name = rest.dropFirst().prefix(while: { $0 != quote })
        guard !name.isEmpty, name.count < rest.count - 1, name.allSatisfy(isEncodingNameByte) else {
            throw .unreadableEncoding("the encoding declaration is malformed")
        }
        return String(decoding: name, as: UTF8.self)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// `[A-Za-z0-9._-]`, the characters of an XML encoding name.
    private static func isEncodingNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }
}
