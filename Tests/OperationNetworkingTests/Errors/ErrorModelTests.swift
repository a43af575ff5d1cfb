import Foundation
@testable import OperationNetworking
import XCTest

/// One error model: the same failure is the same error wherever it is found, and every error the
/// library creates has a domain, a named code, a description and the failing URL where there is one.
final class ErrorModelTests: ServerTestCase {
    private func assertDescribed(_ error: Error, file: StaticString = #filePath, line: UInt = #line) {
        let description = (error as NSError).userInfo[NSLocalizedDescriptionKey] as? String
        XCTAssertFalse(description?.isEmpty ?? true, "a description: \(error)", file: file, line: line)
    }

    func testABadURLIsURLErrorBadURLFromTheSerializerAndTheManager() throws {
        XCTAssertThrowsError(try HTTPRequestSerializer().request(method: "GET", urlString: "no scheme", parameters: nil)) {
            XCTAssertEqual(($0 as? URLError)?.code, .badURL)
            XCTAssertEqual(($0 as NSError).domain, NSURLErrorDomain)
            XCTAssertEqual(($0 as NSError).userInfo[LibraryError.failingURLStringKey] as? String, "no scheme")
            assertDescribed($0)
        }
        let failed = expectation(description: "failure")
        HTTPRequestOperationManager().GET("http://exa mple.com/<>", parameters: nil, success: nil, failure: { _, error in
            XCTAssertEqual((error as? URLError)?.code, .badURL)
            XCTAssertEqual((error as NSError).userInfo[LibraryError.failingURLStringKey] as? String, "http://exa mple.com/<>")
            failed.fulfill()
        })
        wait(for: [failed], timeout: 5)
    }

    func testAHeaderWithCRLFIsTheSameErrorInTheSerializerAndTheTransport() throws {
        let serializer = HTTPRequestSerializer()
        serializer.setValue("x\r\nInjected: 1", forHTTPHeaderField: "X-Bad")
        var fromSerializer: NSError?
        XCTAssertThrowsError(try serializer.request(method: "GET", urlString: server.url("/echo").absoluteString,
                                                    parameters: nil)) { fromSerializer = $0 as NSError }
        var raw = request("/echo")
        raw.allHTTPHeaderFields = ["X-Bad": "x\r\nInjected: 1"]   // setValue would drop it; this reaches the transport
        let (operation, outcome) = run(raw)
        let fromTransport = try XCTUnwrap(outcome.error as NSError?)
        for error in [try XCTUnwrap(fromSerializer), fromTransport] {
            XCTAssertEqual(error.domain, RequestSerializationErrorDomain)
            XCTAssertEqual(error.code, RequestSerializationErrorCode.invalidHeader.rawValue)
            XCTAssertEqual(error.userInfo[NSURLErrorFailingURLErrorKey] as? URL, operation.request.url)
            assertDescribed(error)
        }
        XCTAssertTrue(server.requests.isEmpty, "nothing was sent")
    }

    func testRequestSerializationCodesAreNamedAndDistinct() throws {
        let serializer = HTTPRequestSerializer()
        XCTAssertThrowsError(try serializer.multipartFormRequest(method: "GET", urlString: "http://h/x", parameters: nil,
                                                                 constructingBodyWith: nil)) {
            XCTAssertEqual(($0 as NSError).code, RequestSerializationErrorCode.methodCannotCarryBody.rawValue)
            XCTAssertEqual(($0 as NSError).userInfo[NSURLErrorFailingURLErrorKey] as? URL, URL(string: "http://h/x"))
        }
        let missing = URL(fileURLWithPath: "/nonexistent/\(UUID().uuidString).txt")
        XCTAssertThrowsError(try serializer.multipartFormRequest(method: "POST", urlString: "http://h/x", parameters: nil,
                                                                 constructingBodyWith: { try $0.appendPart(withFileURL: missing, name: "f") })) {
            XCTAssertEqual(($0 as NSError).code, RequestSerializationErrorCode.fileNotReadable.rawValue)
            XCTAssertEqual(($0 as NSError).userInfo[NSURLErrorFailingURLErrorKey] as? URL, missing)
        }
        XCTAssertThrowsError(try serializer.multipartFormRequest(method: "POST", urlString: "http://h/x", parameters: nil,
                                                                 constructingBodyWith: {
            try $0.appendPart(withFileURL: URL(string: "http://h/file.txt")!, name: "f")
        })) {
            XCTAssertEqual(($0 as NSError).code, RequestSerializationErrorCode.notAFileURL.rawValue)
        }
        XCTAssertThrowsError(try JSONRequestSerializer().request(method: "POST", urlString: "http://h/x", parameters: ["d": Date()])) {
            XCTAssertEqual(($0 as NSError).code, RequestSerializationErrorCode.unencodableParameters.rawValue)
            XCTAssertEqual(($0 as NSError).code, NSURLErrorCannotDecodeRawData, "the code AFN used")
            XCTAssertNotNil(($0 as NSError).userInfo[NSURLErrorFailingURLErrorKey])
        }
        let codes = [RequestSerializationErrorCode.unencodableParameters, .bodyStreamExhausted, .cannotCreateFile, .invalidHeader,
                     .methodCannotCarryBody, .notAFileURL, .fileNotReadable, .missingBodyStream].map(\.rawValue)
        XCTAssertEqual(Set(codes).count, codes.count)
        XCTAssertFalse(codes.contains(NSURLErrorBadURL), "NSURLErrorBadURL is not reused for other failures")
    }

    /// A custom query block's text is never a reason to send a request without a URL. This Foundation
    /// percent-encodes what a URL cannot hold (every Unicode scalar was tried), so the serializer's
    /// `URLError(.badURL)` for an unparseable result is a guard this test cannot reach; it checks the
    /// outcome callers rely on instead.
    func testACustomQueryNeverLeavesTheRequestWithoutAURL() throws {
        let serializer = HTTPRequestSerializer()
        serializer.setQueryStringSerialization { _, _ in "q=a b<>" }
        let request = try serializer.request(method: "GET", urlString: "http://h/x", parameters: ["q": "1"])
        XCTAssertEqual(request.url?.absoluteString, "http://h/x?q=a%20b%3C%3E")
    }

    func testWritingAMultipartBodyToAFileNamesTheRequestURLInItsErrors() throws {
        let serializer = HTTPRequestSerializer()
        let url = try XCTUnwrap(URL(string: "http://h/upload"))
        let target = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).multipart")
        defer { try? FileManager.default.removeItem(at: target) }
        let errors = Recorder<NSError?>()
        var unreadable = URLRequest(url: url)
        unreadable.httpBodyStream = UnreadableStream()
        for request in [URLRequest(url: url), unreadable] {   // one after the other, so the order is known
            let done = expectation(description: "copy ended")
            _ = serializer.request(withMultipartFormRequest: request, writingStreamContentsTo: target) {
                errors.append($0 as NSError?)
                done.fulfill()
            }
            wait(for: [done], timeout: 5)
        }
        let codes = errors.all.map { $0?.code }
        XCTAssertEqual(codes, [RequestSerializationErrorCode.missingBodyStream.rawValue,
                               RequestSerializationErrorCode.bodyStreamExhausted.rawValue])
        for error in errors.all {
            XCTAssertEqual(error?.userInfo[NSURLErrorFailingURLErrorKey] as? URL, url)
            assertDescribed(try XCTUnwrap(error))
        }
    }

    func testTransportErrorsCarryTheFailingURLAndADescription() throws {
        let operation = HTTPRequestOperation(request: request("/echo"))
        operation.cancel()
        let outcome = run(operation)
        let error = try XCTUnwrap(outcome.error as? URLError)
        XCTAssertEqual(error.code, .cancelled)
        XCTAssertEqual(error.failingURL, operation.request.url)
        assertDescribed(error)
        let bare = TransportError.completed(URLError(.cannotWriteToFile), url: operation.request.url)
        XCTAssertEqual((bare as? URLError)?.failingURL, operation.request.url)
        assertDescribed(bare)
    }

    func testArchiveErrorsHaveNamedCodes() throws {
        let policy = try SafeArchive.archive(SecurityPolicy.default())
        XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: policy)) {
            XCTAssertEqual(($0 as NSError).domain, ArchiveErrorDomain)
            XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.wrongRootClass.rawValue)
            assertDescribed($0)
        }
        XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: Data("garbage".utf8))) {
            XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.damaged.rawValue)
        }
        XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: Data(count: SafeArchive.maximumSize + 1))) {
            XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.tooLarge.rawValue)
        }
    }
}

/// A body stream whose reads fail without an error of its own, as a broken custom stream might.
private final class UnreadableStream: InputStream {
    init() { super.init(data: Data()) }
    override func open() {}
    override func close() {}
    override var hasBytesAvailable: Bool { true }
    override var streamError: Error? { nil }
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int { -1 }
}
