// Deliberately only these two imports: `import OperationNetworking` alone must make Foundation,
// FoundationNetworking and FoundationXML (XMLDocument, XMLParser) usable, as the serializers return them.
import OperationNetworking
import XCTest

/// Bodies a serializer must refuse: malformed XML, and image types it cannot describe.
final class MalformedBodyTests: ServerTestCase {
    private func response(_ contentType: String) -> HTTPURLResponse? {
        HTTPURLResponse(url: URL(fileURLWithPath: "/x"), statusCode: 200, httpVersion: "HTTP/1.1",
                        headerFields: ["Content-Type": contentType])
    }

    func testMalformedXMLIsACannotDecodeError() throws {
        let serializer = XMLDocumentResponseSerializer()
        for body in ["<a><b></a>", "<root><unclosed></root>", "<a>text"] {
            XCTAssertThrowsError(try serializer.responseObject(for: response("text/xml"), data: Data(body.utf8)), body) { error in
                XCTAssertEqual((error as NSError).domain, ResponseSerializationErrorDomain)
                XCTAssertEqual((error as NSError).code, NSURLErrorCannotDecodeContentData)
                XCTAssertNotNil((error as NSError).userInfo[NSURLErrorFailingURLErrorKey], "the failing URL is attached")
                XCTAssertNotNil((error as NSError).userInfo[FailingURLResponseDataErrorKey])
            }
        }
        let document: XMLDocument? = try serializer.responseObject(for: response("application/xml"),
                                                                   data: Data("<root><item/></root>".utf8)) as? XMLDocument
        XCTAssertEqual(document?.rootElement()?.name, "root")
        let parser: XMLParser? = try XMLParserResponseSerializer().responseObject(for: response("text/xml"),
                                                                                  data: Data("<a/>".utf8)) as? XMLParser
        XCTAssertEqual(parser?.parse(), true)
    }

    func testMalformedXMLOverTheWireFailsTheOperation() throws {
        let body = "<a><b></a>".addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let operation = HTTPRequestOperation(request: request("/status/200?contentType=text/xml&body=\(body)"))
        operation.responseSerializer = XMLDocumentResponseSerializer()
        let outcome = run(operation)
        let error = try XCTUnwrap(outcome.error as NSError?)
        XCTAssertEqual(error.domain, ResponseSerializationErrorDomain)
        XCTAssertEqual(error.code, NSURLErrorCannotDecodeContentData)
        XCTAssertEqual(error.userInfo[NSURLErrorFailingURLErrorKey] as? URL, operation.request.url)
        XCTAssertEqual((error.userInfo[FailingURLResponseErrorKey] as? HTTPURLResponse)?.statusCode, 200)
        XCTAssertEqual(error.userInfo[FailingURLResponseDataErrorKey] as? Data, Data("<a><b></a>".utf8))
    }

    func testImageSerializerAcceptsOnlyTypesItCanDescribe() throws {
        let serializer = ImageResponseSerializer()
        XCTAssertEqual(serializer.acceptableContentTypes,
                       ["image/png", "image/jpeg", "image/gif", "image/bmp", "image/x-bmp", "image/x-ms-bmp", "image/webp"])
        let tiff = Data([0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00])
        for type in ["image/tiff", "image/x-icon", "image/ico", "image/x-xbitmap"] {
            XCTAssertThrowsError(try serializer.responseObject(for: response(type), data: tiff), type) { error in
                XCTAssertEqual((error as NSError).code, NSURLErrorCannotDecodeContentData)
                XCTAssertNotNil((error as NSError).userInfo[FailingURLResponseErrorKey],
                                "refused by validation, as an unacceptable content type")
            }
        }
        let gif = Data(Array("GIF89a".utf8) + [0x02, 0x00, 0x03, 0x00, 0, 0, 0])
        let image = try XCTUnwrap(try serializer.responseObject(for: response("image/gif"), data: gif) as? Image)
        XCTAssertEqual(image.pixelWidth, 2)
    }
}
