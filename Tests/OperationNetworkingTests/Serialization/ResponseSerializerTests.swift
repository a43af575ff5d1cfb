import Foundation
import FoundationXML
@testable import OperationNetworking
import XCTest

/// Response validation and every response serializer.
final class ResponseSerializerTests: LibraryTestCase {
    private func response(_ status: Int = 200, _ contentType: String? = "application/json") -> HTTPURLResponse {
        HTTPURLResponse(url: URL(string: "http://example.com/x")!, statusCode: status, httpVersion: "HTTP/1.1",
                        headerFields: contentType.map { ["Content-Type": $0] } ?? [:])!
    }

    func testValidationTableOfAFN() {
        let serializer = HTTPResponseSerializer()
        serializer.acceptableContentTypes = ["application/json"]
        let body = Data("{}".utf8)
        XCTAssertNoThrow(try serializer.validate(response(200), data: body))
        XCTAssertEqual(code { try serializer.validate(self.response(200, "text/html"), data: body) }, NSURLErrorCannotDecodeContentData)
        XCTAssertNoThrow(try serializer.validate(response(200, "text/html"), data: Data()), "wrong type, empty body: no error (AFN)")
        XCTAssertEqual(code { try serializer.validate(self.response(404), data: body) }, NSURLErrorBadServerResponse)
        do {
            try serializer.validate(response(500, "text/html"), data: body)
            XCTFail("must throw")
        } catch let error as NSError {
            XCTAssertEqual(error.code, NSURLErrorBadServerResponse)
            XCTAssertEqual((error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code, NSURLErrorCannotDecodeContentData)
            XCTAssertEqual(error.userInfo[FailingURLResponseDataErrorKey] as? Data, body)
            XCTAssertNotNil(error.userInfo[FailingURLResponseErrorKey] as? HTTPURLResponse)
            XCTAssertEqual(error.userInfo[NSURLErrorFailingURLErrorKey] as? URL, URL(string: "http://example.com/x"))
            XCTAssertTrue(error.localizedDescription.contains("(500)"), error.localizedDescription)
        }
    }

    /// The status check for every shape of `acceptableStatusCodes` (one range is checked by its bounds,
    /// others through the set), on the serializer, its copy and its archive.
    func testStatusCodeSetsOfEveryShape() throws {
        let cases: [(IndexSet?, accepted: [Int], rejected: [Int])] = [
            (IndexSet(integersIn: 200..<300), [200, 250, 299], [199, 300, 404]),
            (IndexSet(integersIn: 200..<400), [200, 304, 399], [199, 400]),
            (IndexSet([200, 204]), [200, 204], [201, 203, 205]),
            (IndexSet(integersIn: 200..<300).union(IndexSet(integer: 404)), [200, 299, 404], [300, 403, 405]),
            (IndexSet(), [], [200, 404]),
            (nil, [100, 200, 404, 599], []),
        ]
        for (codes, accepted, rejected) in cases {
            let serializer = HTTPResponseSerializer()
            serializer.acceptableStatusCodes = codes
            let archive = try NSKeyedArchiver.archivedData(withRootObject: serializer, requiringSecureCoding: true)
            let restored = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClass: HTTPResponseSerializer.self, from: archive))
            let copy = try XCTUnwrap(serializer.copy() as? HTTPResponseSerializer)
            for candidate in [serializer, restored, copy] {
                for status in accepted {
                    XCTAssertNoThrow(try candidate.validate(response(status), data: Data("x".utf8)), "\(String(describing: codes)) \(status)")
                }
                for status in rejected {
                    XCTAssertEqual(code { try candidate.validate(self.response(status), data: Data("x".utf8)) },
                                   NSURLErrorBadServerResponse, "\(String(describing: codes)) \(status)")
                }
            }
        }
        // The default is 200-299.
        XCTAssertEqual(code { try HTTPResponseSerializer().validate(self.response(300), data: Data()) }, NSURLErrorBadServerResponse)
        XCTAssertNoThrow(try HTTPResponseSerializer().validate(response(299), data: Data()))
    }

    func testJSONRules() throws {
        let serializer = JSONResponseSerializer()
        XCTAssertNil(try serializer.responseObject(for: response(), data: Data()))
        XCTAssertNil(try serializer.responseObject(for: response(), data: Data(" ".utf8)))
        XCTAssertEqual((try serializer.responseObject(for: response(), data: Data(#"{"a":1}"#.utf8)) as? [String: Int])?["a"], 1)
        XCTAssertThrowsError(try serializer.responseObject(for: response(), data: Data(#"{"a":"#.utf8)), "truncated JSON")
        XCTAssertThrowsError(try serializer.responseObject(for: response(), data: Data([0x7B, 0xFF, 0xFE, 0x7D])), "invalid UTF-8")
        XCTAssertThrowsError(try serializer.responseObject(for: response(200, "text/html"), data: Data("{}".utf8)))
        let latin1 = try serializer.responseObject(for: response(200, "application/json; charset=iso-8859-1"),
                                                   data: Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xE9, 0x22, 0x7D]))
        XCTAssertEqual((latin1 as? [String: String])?["a"], "é")
        XCTAssertThrowsError(try serializer.responseObject(for: response(), data: Data("3".utf8)))
        serializer.readingOptions = [.fragmentsAllowed]
        XCTAssertEqual(try serializer.responseObject(for: response(), data: Data("3".utf8)) as? Int, 3)
    }

    func testErrorStatusStillDecodesAndChainsParseErrors() throws {
        let serializer = JSONResponseSerializer()
        do {
            _ = try serializer.responseObject(for: response(404), data: Data(#"{"error":"gone"}"#.utf8))
            XCTFail("must throw")
        } catch let error as NSError {
            XCTAssertEqual(error.code, NSURLErrorBadServerResponse)
            XCTAssertEqual((error.userInfo[ResponseObjectErrorKey] as? [String: String])?["error"], "gone")
        }
        do {
            _ = try serializer.responseObject(for: response(500), data: Data("<html>".utf8))
            XCTFail("must throw")
        } catch let error as NSError {
            XCTAssertEqual(error.domain, NSCocoaErrorDomain, "the parse error first")
            XCTAssertEqual((error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code, NSURLErrorBadServerResponse)
        }
    }

    func testRemovesKeysWithNullValuesRecursively() throws {
        let serializer = JSONResponseSerializer()
        serializer.removesKeysWithNullValues = true
        let json = #"{"a":null,"b":{"c":null,"d":1},"e":[{"f":null,"g":2},null]}"#
        let object = try XCTUnwrap(try serializer.responseObject(for: response(), data: Data(json.utf8)) as? [String: Any])
        XCTAssertNil(object["a"])
        XCTAssertEqual((object["b"] as? [String: Any])?.keys.sorted(), ["d"])
        let array = try XCTUnwrap(object["e"] as? [Any])
        XCTAssertEqual((array[0] as? [String: Any])?.keys.sorted(), ["g"])
        XCTAssertTrue(array[1] is NSNull, "arrays keep their null elements")
    }

    func testXMLSerializers() throws {
        let xml = Data("<root><item id=\"1\">a</item></root>".utf8)
        let parser = try XCTUnwrap(try XMLParserResponseSerializer().responseObject(for: response(200, "text/xml"), data: xml) as? XMLParser)
        XCTAssertTrue(parser.parse())
        let document = try XCTUnwrap(try XMLDocumentResponseSerializer().responseObject(for: response(200, "application/xml"), data: xml) as? XMLDocument)
        XCTAssertEqual(try document.nodes(forXPath: "//item").count, 1)
        XCTAssertThrowsError(try XMLDocumentResponseSerializer().responseObject(for: response(200, "text/xml"), data: Data("not xml".utf8)))
        let bomb = """
        <?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\
        <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">\
        <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]><lolz>&lol4;&lol4;&lol4;</lolz>
        """
        XCTAssertThrowsError(try XMLDocumentResponseSerializer().responseObject(for: response(200, "text/xml"), data: Data(bomb.utf8)))
        XCTAssertThrowsError(try XMLParserResponseSerializer().responseObject(for: response(200, "text/xml"), data: Data(bomb.utf8)))
        XCTAssertThrowsError(try XMLParserResponseSerializer().responseObject(for: response(200, "application/json"), data: xml))
    }

    func testHostileBodiesFailWithoutCrashing() throws {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        XCTAssertThrowsError(try JSONResponseSerializer().responseObject(for: response(), data: Data(deep.utf8)))
        // A binary property list whose trailer claims 2^31 objects (a 2 GB table) and one whose offset table lies.
        var claimed = try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .binary, options: 0)
        let end = claimed.count
        for (index, byte) in [0, 0, 0, 0, 0x80, 0, 0, 0].enumerated() { claimed[end - 24 + index] = UInt8(byte) }
        let before = residentBytes()
        XCTAssertThrowsError(try PropertyListResponseSerializer().responseObject(for: response(200, "application/x-plist"), data: claimed))
        for (index, byte) in [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF].enumerated() { claimed[end - 8 + index] = UInt8(byte) }
        XCTAssertThrowsError(try PropertyListResponseSerializer().responseObject(for: response(200, "application/x-plist"), data: claimed))
        XCTAssertLessThan(residentBytes() - before, 64 << 20, "no allocation for the claimed size")
        XCTAssertThrowsError(try JSONResponseSerializer().responseObject(for: response(), data: Data(repeating: 0xFF, count: 1000)))
    }

    func testPropertyListSerializer() throws {
        let body = try PropertyListSerialization.data(fromPropertyList: ["k": "v"], format: .binary, options: 0)
        let object = try PropertyListResponseSerializer().responseObject(for: response(200, "application/x-plist"), data: body)
        XCTAssertEqual((object as? [String: String])?["k"], "v")
        XCTAssertNil(try PropertyListResponseSerializer().responseObject(for: response(204, "application/x-plist"), data: nil))
        XCTAssertThrowsError(try PropertyListResponseSerializer().responseObject(for: response(200, "application/x-plist"), data: Data("{{{".utf8)))
    }

    func testImageHeadersGiveFormatAndSize() throws {
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
                       + [0, 0, 1, 0x2C, 0, 0, 0, 0xC8, 8, 6, 0, 0, 0])
        let gif = Data(Array("GIF89a".utf8) + [0x40, 0x01, 0xF0, 0x00, 0, 0, 0])
        var bmp = Data([0x42, 0x4D] + [UInt8](repeating: 0, count: 16))
        bmp.append(contentsOf: [0x10, 0, 0, 0, 0xF0, 0xFF, 0xFF, 0xFF])   // width 16, height -16 (top-down)
        let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0x20, 0x00, 0x40, 0x03]
                        + [UInt8](repeating: 0, count: 16))
        var webp = Data(Array("RIFF".utf8) + [0, 0, 0, 0] + Array("WEBPVP8X".utf8) + [10, 0, 0, 0, 0, 0, 0, 0])
        webp.append(contentsOf: [0x1F, 0x00, 0x00, 0x0F, 0x00, 0x00])   // 32 × 16
        let cases: [(Data, Image.Format, Int, Int)] = [(png, .png, 300, 200), (gif, .gif, 320, 240), (bmp, .bmp, 16, 16),
                                                      (jpeg, .jpeg, 64, 32), (webp, .webp, 32, 16)]
        for (data, format, width, height) in cases {
            let image = try XCTUnwrap(try ImageResponseSerializer().responseObject(for: response(200, "image/png"), data: data) as? Image)
            XCTAssertEqual(image.format, format)
            XCTAssertEqual(image.pixelWidth, width, "\(format)")
            XCTAssertEqual(image.pixelHeight, height, "\(format)")
            XCTAssertEqual(image.data, data)
        }
        XCTAssertThrowsError(try ImageResponseSerializer().responseObject(for: response(200, "image/png"), data: Data("no".utf8)))
        XCTAssertNil(Image(data: Data([0xFF, 0xD8, 0xFF])), "a truncated JPEG has no size")
    }

    func testCompoundTakesTheFirstObject() throws {
        let compound = CompoundResponseSerializer(responseSerializers: [JSONResponseSerializer(), PropertyListResponseSerializer()])
        let plist = try PropertyListSerialization.data(fromPropertyList: ["k": 1], format: .xml, options: 0)
        XCTAssertNotNil(try compound.responseObject(for: response(200, "application/x-plist"), data: plist) as? [String: Any])
        XCTAssertNotNil(try compound.responseObject(for: response(200, "application/json"), data: Data("[1]".utf8)) as? [Any])
        XCTAssertEqual(try compound.responseObject(for: response(200, "text/plain"), data: Data("raw".utf8)) as? Data, Data("raw".utf8))
    }

    func testCopiesAndArchivesKeepEverySetting() throws {
        let json = JSONResponseSerializer()
        json.acceptableContentTypes = ["application/vnd.api+json"]
        json.acceptableStatusCodes = IndexSet([200, 201, 404])
        json.removesKeysWithNullValues = true
        json.readingOptions = [.fragmentsAllowed]
        let compound = CompoundResponseSerializer(responseSerializers: [json, XMLDocumentResponseSerializer()])
        let archived = try NSKeyedArchiver.archivedData(withRootObject: compound, requiringSecureCoding: true)
        let restored = try XCTUnwrap(NSKeyedUnarchiver.unarchivedObject(ofClasses: [CompoundResponseSerializer.self, JSONResponseSerializer.self,
            XMLDocumentResponseSerializer.self, NSArray.self], from: archived) as? CompoundResponseSerializer)
        let copy = try XCTUnwrap(compound.copy() as? CompoundResponseSerializer)
        for candidate in [restored, copy] {
            let inner = try XCTUnwrap(candidate.responseSerializers.first as? JSONResponseSerializer)
            XCTAssertFalse(inner === json)
            XCTAssertEqual(inner.acceptableContentTypes, ["application/vnd.api+json"])
            XCTAssertEqual(inner.acceptableStatusCodes, IndexSet([200, 201, 404]))
            XCTAssertTrue(inner.removesKeysWithNullValues)
            XCTAssertEqual(inner.readingOptions, [.fragmentsAllowed])
            XCTAssertTrue(candidate.responseSerializers.last is XMLDocumentResponseSerializer)
        }
        (copy.responseSerializers.first as? JSONResponseSerializer)?.removesKeysWithNullValues = false
        XCTAssertTrue(json.removesKeysWithNullValues, "a copy shares no state")
        let plain = XMLParserResponseSerializer()
        let plainArchive = try NSKeyedArchiver.archivedData(withRootObject: plain, requiringSecureCoding: true)
        XCTAssertEqual(try NSKeyedUnarchiver.unarchivedObject(ofClass: XMLParserResponseSerializer.self, from: plainArchive)?
            .acceptableContentTypes, ["application/xml", "text/xml"])
    }

    func testEverySerializerClassRoundTripsItsSettings() throws {
        let document = XMLDocumentResponseSerializer()
        document.options = [.nodePreserveWhitespace]
        let plist = PropertyListResponseSerializer()
        plist.format = .binary
        plist.readOptions = [.mutableContainers]
        let image = ImageResponseSerializer()
        image.acceptableStatusCodes = IndexSet([200])
        let all: [HTTPResponseSerializer] = [document, plist, image, HTTPResponseSerializer(), XMLParserResponseSerializer()]
        for serializer in all {
            serializer.stringEncoding = .utf16
            let archive = try NSKeyedArchiver.archivedData(withRootObject: serializer, requiringSecureCoding: true)
            let restored = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClass: HTTPResponseSerializer.self, from: archive))
            XCTAssertTrue(type(of: restored) == type(of: serializer))
            XCTAssertEqual(restored.acceptableContentTypes, serializer.acceptableContentTypes)
            XCTAssertEqual(restored.acceptableStatusCodes, serializer.acceptableStatusCodes)
            XCTAssertEqual(restored.stringEncoding, .utf16)
            let copy = try XCTUnwrap(serializer.copy() as? HTTPResponseSerializer)
            XCTAssertTrue(type(of: copy) == type(of: serializer))
            XCTAssertEqual(copy.acceptableStatusCodes, serializer.acceptableStatusCodes)
        }
        let restoredDocument = try NSKeyedUnarchiver.unarchivedObject(ofClass: XMLDocumentResponseSerializer.self,
            from: try NSKeyedArchiver.archivedData(withRootObject: document, requiringSecureCoding: true))
        XCTAssertEqual(restoredDocument?.options, [.nodePreserveWhitespace])
        let restoredPlist = try NSKeyedUnarchiver.unarchivedObject(ofClass: PropertyListResponseSerializer.self,
            from: try NSKeyedArchiver.archivedData(withRootObject: plist, requiringSecureCoding: true))
        XCTAssertEqual(restoredPlist?.format, .binary)
        XCTAssertEqual(restoredPlist?.readOptions, [.mutableContainers])
    }

    private func code(_ body: () throws -> Void) -> Int? {
        do { try body(); return nil } catch { return (error as NSError).code }
    }
}
