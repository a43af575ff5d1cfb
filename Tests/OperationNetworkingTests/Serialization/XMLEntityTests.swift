import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Hostile XML served over loopback to both XML serializers, in every encoding libxml2 reads: no entity
/// is ever expanded or loaded — a local file's text never reaches the result, the parser never fetches
/// a URL the body names (the test's own server must receive no request), an expansion bomb is refused
/// at once — and the operation fails with `NSURLErrorCannotDecodeContentData`.
final class XMLEntityTests: ServerTestCase {
    /// One way to put a document into bytes: its XML declaration's `encoding`, its byte order mark, and
    /// how its characters become bytes.
    private struct Encoding {
        let name: String
        let declared: String?
        let byteOrderMark: [UInt8]
        let encode: @Sendable (String) -> [UInt8]
        /// Whether the library reads it (UTF-7, a declared switch away from the detected encoding, is refused).
        var readable = true

        /// The document: byte order mark, XML declaration, then `body`. A UTF-7 declaration is ASCII.
        func bytes(_ body: String) -> [UInt8] {
            let declaration = declared.map { "<?xml version=\"1.0\" encoding=\"\($0)\"?>" } ?? ""
            return byteOrderMark + (readable ? encode(declaration + body) : Array(declaration.utf8) + encode(body))
        }
    }

    private static let encodings: [Encoding] = [
        Encoding(name: "UTF-8", declared: nil, byteOrderMark: [], encode: { Array($0.utf8) }),
        Encoding(name: "UTF-8 with BOM", declared: "UTF-8", byteOrderMark: [0xEF, 0xBB, 0xBF], encode: { Array($0.utf8) }),
        Encoding(name: "ISO-8859-1 declared", declared: "ISO-8859-1", byteOrderMark: [], encode: latin1),
        Encoding(name: "UTF-16LE", declared: "UTF-16", byteOrderMark: [], encode: { utf16($0, bigEndian: false) }),
        Encoding(name: "UTF-16LE with BOM", declared: nil, byteOrderMark: [0xFF, 0xFE], encode: { utf16($0, bigEndian: false) }),
        Encoding(name: "UTF-16BE", declared: "UTF-16BE", byteOrderMark: [], encode: { utf16($0, bigEndian: true) }),
        Encoding(name: "UTF-16BE with BOM", declared: "UTF-16", byteOrderMark: [0xFE, 0xFF], encode: { utf16($0, bigEndian: true) }),
        Encoding(name: "UCS-4BE", declared: "UCS-4", byteOrderMark: [], encode: ucs4BigEndian),
        Encoding(name: "UTF-7 declared", declared: "UTF-7", byteOrderMark: [], encode: utf7, readable: false),
    ]

    private static func latin1(_ text: String) -> [UInt8] {
        text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
    }

    private static func utf16(_ text: String, bigEndian: Bool) -> [UInt8] {
        text.utf16.flatMap { unit in
            bigEndian ? [UInt8(unit >> 8), UInt8(unit & 0xFF)] : [UInt8(unit & 0xFF), UInt8(unit >> 8)]
        }
    }

    private static func ucs4BigEndian(_ text: String) -> [UInt8] {
        text.unicodeScalars.flatMap { scalar in (0..<4).reversed().map { UInt8(truncatingIfNeeded: scalar.value >> ($0 * 8)) } }
    }

    /// UTF-7 with every character outside letters, digits and space encoded (`<` is `+ADw-`).
    private static func utf7(_ text: String) -> [UInt8] {
        text.unicodeScalars.flatMap { scalar -> [UInt8] in
            if ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == " " {
                return Array(String(scalar).utf8)
            }
            let encoded = Data(utf16(String(scalar), bigEndian: true)).base64EncodedString().replacingOccurrences(of: "=", with: "")
            return Array("+\(encoded)-".utf8)
        }
    }

    /// The serializers under test; the last asks XMLDocument to load external entities, which must
    /// change nothing.
    private func serializers() -> [HTTPResponseSerializer] {
        let loading = XMLDocumentResponseSerializer()
        loading.options = [.nodeLoadExternalEntitiesAlways]
        return [XMLDocumentResponseSerializer(), XMLParserResponseSerializer(), loading]
    }

    // MARK: - Tests

    func testAFileEntityIsNeverRead() throws {
        let marker = "FILE-MARKER-\(UUID().uuidString)"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("xxe-\(UUID().uuidString).txt")
        try Data(marker.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        assertRefused("<!DOCTYPE r [<!ENTITY x SYSTEM \"\(file.absoluteString)\">]><r>&x;</r>", marker: marker)
    }

    func testAnHTTPEntityOrExternalSubsetIsNeverFetched() throws {
        assertRefused("<!DOCTYPE r [<!ENTITY x SYSTEM \"\(server.url("/entity"))\">]><r>&x;</r>")
        assertRefused("<!DOCTYPE r SYSTEM \"\(server.url("/subset.dtd"))\"><r/>")
        XCTAssertEqual(server.requests.map(\.path), [], "the parser fetched a URL the body named")
    }

    func testAParameterEntityIsNeverFetched() throws {
        assertRefused("<!DOCTYPE r [<!ENTITY % remote SYSTEM \"\(server.url("/parameter.dtd"))\"> %remote;]><r/>")
        XCTAssertEqual(server.requests.map(\.path), [], "the parser fetched a URL the body named")
    }

    /// The bomb, refused at once, and a small expansion that libxml2's own limits let through.
    func testBillionLaughsIsRefusedAndNoInternalEntityIsExpanded() throws {
        var declarations = "<!ENTITY lol0 \"lol\">"
        for level in 1...9 {
            declarations += "<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">"
        }
        assertRefused("<!DOCTYPE lolz [\(declarations)]><lolz>&lol9;</lolz>", marker: "lollol")
        assertRefused("<!DOCTYPE lolz [<!ENTITY lol0 \"lol\"><!ENTITY lol1 \"&lol0;&lol0;&lol0;\">]><lolz>&lol1;</lolz>",
                      marker: "lollol")
    }

    /// A document type declaration alone is refused too: it is how every entity starts.
    func testADocumentTypeDeclarationWithoutEntitiesIsRefused() throws {
        assertRefused("<!DOCTYPE r><r>text</r>")
    }

    /// The second line of defence, should a declaration ever get past the check: the options a
    /// document is parsed with read no file, whatever the caller asked for.
    func testTheParsingOptionsLoadNothingEvenForADeclaredEntity() throws {
        let marker = "FILE-MARKER-\(UUID().uuidString)"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("xxe-\(UUID().uuidString).txt")
        try Data(marker.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let body = Data("<!DOCTYPE r [<!ENTITY x SYSTEM \"\(file.absoluteString)\">]><r>&x;</r>".utf8)
        for asked: XMLNode.Options in [[], [.nodeLoadExternalEntitiesAlways], [.nodeLoadExternalEntitiesSameOriginOnly]] {
            let document = try XMLDocument(data: body, options: XMLDocumentResponseSerializer.parsingOptions(asked))
            XCTAssertFalse(document.xmlString.contains(marker), "options \(asked.rawValue) read the file")
        }
    }

    /// What stays accepted: a plain document in every encoding the library reads, with its predefined
    /// entities and character references (which load nothing) decoded.
    func testPlainDocumentsInEveryReadableEncodingAreParsed() throws {
        for encoding in XMLEntityTests.encodings where encoding.readable {
            let raw = try rawServer(serving: encoding.bytes("<r a=\"1\">x &amp; &#65;&#x42;</r>"))
            defer { raw.stop() }
            for serializer in serializers() {
                let label = "\(encoding.name), \(type(of: serializer))"
                let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(raw.url)))
                operation.responseSerializer = serializer
                guard case .success(let object) = run(operation) else {
                    XCTFail("\(label): refused: \(String(describing: operation.error))")
                    continue
                }
                XCTAssertEqual(text(of: object.value), "x & AB", label)
            }
        }
    }

    // MARK: - Helpers

    /// Serves `body` in every encoding to every serializer: each must fail with the decode error, and
    /// `marker` must be nowhere in what came back (parsing a returned `XMLParser` included).
    private func assertRefused(_ body: String, marker: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        for encoding in XMLEntityTests.encodings {
            guard let raw = try? rawServer(serving: encoding.bytes(body)), let url = raw.url else {
                return XCTFail("no raw server", file: file, line: line)
            }
            defer { raw.stop() }
            for serializer in serializers() {
                let label = "\(encoding.name), \(type(of: serializer)) \(body.prefix(40))"
                let operation = HTTPRequestOperation(request: URLRequest(url: url))
                operation.responseSerializer = serializer
                let outcome = run(operation)
                if let marker {
                    XCTAssertFalse(text(of: operation.responseObject).contains(marker), "\(label): an entity was expanded",
                                   file: file, line: line)
                    XCTAssertFalse("\(outcome)".contains(marker), "\(label): an entity was expanded", file: file, line: line)
                }
                guard let error = outcome.error as NSError? else {
                    XCTFail("\(label): accepted", file: file, line: line)
                    continue
                }
                XCTAssertEqual(error.domain, ResponseSerializationErrorDomain, label, file: file, line: line)
                XCTAssertEqual(error.code, NSURLErrorCannotDecodeContentData, label, file: file, line: line)
            }
        }
    }

    /// A loopback peer answering every request with `body` as `text/xml`.
    private func rawServer(serving body: [UInt8]) throws -> RawServer {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return try XCTUnwrap(RawServer(response: Array(head.utf8) + body))
    }

    /// The text a caller gets from a serialized object: a document's string value, or the characters a
    /// returned parser reports when parsed.
    private func text(of object: Any?) -> String {
        if let document = object as? XMLDocument { return document.rootElement()?.stringValue ?? "" }
        guard let parser = object as? XMLParser else { return "" }
        let collector = CharacterCollector()
        parser.delegate = collector
        _ = parser.parse()
        return collector.text
    }

    /// Gathers the characters a parser reports.
    private final class CharacterCollector: NSObject, XMLParserDelegate {
        var text = ""
        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }
    }
}
