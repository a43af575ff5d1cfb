import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// No name, file name, parameter key, MIME type or part header adds a line or a parameter to a part's
/// head: names and file names are escaped as RFC 7578 §4.2 and browsers do (`"` → `%22`, CR → `%0D`,
/// LF → `%0A`, NUL → `%00`), anything else that cannot be written is an error. Checked on the bytes
/// the server received.
final class MultipartInjectionTests: TemporaryDirectoryTestCase {
    /// Sends a multipart POST built from `parameters` and `block`; returns the body the server received.
    private func receivedBody(parameters: Any?, _ block: @escaping (MultipartFormData) throws -> Void) throws -> String {
        let request = try HTTPRequestSerializer().multipartFormRequest(
            method: "POST", urlString: server.url("/upload").absoluteString, parameters: parameters, constructingBodyWith: block)
        let outcome = run(request).1
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        return String(decoding: try XCTUnwrap(server.requests.last).body, as: UTF8.self)
    }

    /// The header lines of every part in `body`, in order (what follows each boundary line up to the
    /// first blank line; the closing boundary has none).
    private func partHeaderLines(_ body: String) -> [String] {
        body.components(separatedBy: "--Boundary+").dropFirst().dropLast().flatMap { part in
            part.components(separatedBy: "\r\n\r\n").first.map { $0.components(separatedBy: "\r\n").dropFirst() } ?? []
        }
    }

    func testNamesFileNamesAndKeysAreEscapedAsBrowsersEscapeThem() throws {
        // A file's own name may carry a quote and a line break (an uploaded file named by someone else).
        let hostileFile = directory.appendingPathComponent("report\"; name=\"admin\r\nX-Injected: file.txt")
        try Data("f".utf8).write(to: hostileFile)
        let body = try receivedBody(parameters: ["key\r\nX-Injected: key": "v", "q\"uote": "w"]) { form in
            form.appendPart(withFormData: Data("x".utf8), name: "field\r\nX-Injected: field")
            form.appendPart(withFileData: Data("y".utf8), name: "n\"; filename=\"evil.sh",
                            fileName: "a\r\nContent-Type: text/html\r\n\r\n<b>\"x\u{0}.txt", mimeType: "text/plain")
            form.appendPart(with: InputStream(data: Data("z".utf8)), name: "s\n", fileName: "s\r", length: 1, mimeType: "text/plain")
            try form.appendPart(withFileURL: hostileFile, name: "upload")
        }
        XCTAssertEqual(partHeaderLines(body), [
            "Content-Disposition: form-data; name=\"key%0D%0AX-Injected: key\"",
            "Content-Disposition: form-data; name=\"q%22uote\"",
            "Content-Disposition: form-data; name=\"field%0D%0AX-Injected: field\"",
            "Content-Disposition: form-data; name=\"n%22; filename=%22evil.sh\"; "
                + "filename=\"a%0D%0AContent-Type: text/html%0D%0A%0D%0A<b>%22x%00.txt\"",
            "Content-Type: text/plain",
            "Content-Disposition: form-data; name=\"s%0A\"; filename=\"s%0D\"",
            "Content-Type: text/plain",
            "Content-Disposition: form-data; name=\"upload\"; filename=\"report%22; name=%22admin%0D%0AX-Injected: file.txt\"",
            "Content-Type: text/plain",
        ], body)
        XCTAssertFalse(body.contains("\nX-Injected"), body)
        XCTAssertTrue(body.contains("name=\"q%22uote\"\r\n\r\nw\r\n"), "the values are the parts' bodies, unchanged")
    }

    /// `appendPart(withHeaders:)` and MIME types are written as given: one that cannot be is an error,
    /// and no request is built.
    func testAPartHeaderThatCannotBeWrittenIsAnError() throws {
        let hostileHeaders: [[String: String]] = [
            ["X-Part": "1\r\nX-Injected: yes"], ["X-Part\r\nX-Injected": "1"], ["X-Part": "1\nX"], ["X Part": "1"],
            ["X-Part": "a\u{0}b"], ["": "1"], ["Content-Disposition": "form-data; name=\"a\"\rX-Injected: yes"],
        ]
        var blocks: [(String, (MultipartFormData) throws -> Void)] = hostileHeaders.map { headers in
            ("\(headers)", { $0.appendPart(withHeaders: headers, body: Data("b".utf8)) })
        }
        let mimeType = "text/plain\r\nX-Injected: yes"
        let file = directory.appendingPathComponent("plain.txt")
        try Data("f".utf8).write(to: file)
        blocks += [
            ("file data", { $0.appendPart(withFileData: Data(), name: "f", fileName: "f.txt", mimeType: mimeType) }),
            ("stream", { $0.appendPart(with: InputStream(data: Data()), name: "s", fileName: "s", length: 0, mimeType: mimeType) }),
            ("file URL", { try $0.appendPart(withFileURL: file, name: "u", fileName: "u.txt", mimeType: mimeType) }),
        ]
        let serializer = HTTPRequestSerializer()
        for (label, block) in blocks {
            XCTAssertThrowsError(try serializer.multipartFormRequest(method: "POST", urlString: server.url("/upload").absoluteString,
                                                                     parameters: nil) { form in
                form.appendPart(withFormData: Data("fine".utf8), name: "fine")
                try block(form)
            }, label) { error in
                let error = error as NSError
                XCTAssertEqual(error.domain, RequestSerializationErrorDomain, label)
                XCTAssertEqual(error.code, RequestSerializationErrorCode.invalidHeader.rawValue, label)
                XCTAssertEqual(error.userInfo[NSURLErrorFailingURLErrorKey] as? URL, self.server.url("/upload"), label)
            }
        }
        // Through the manager: failure(nil, error) and nothing on the wire.
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        let failed = expectation(description: "failure")
        let operation = manager.POST("/upload", parameters: nil, constructingBodyWith: { form in
            form.appendPart(withHeaders: ["X-Part": "1\r\nX-Injected: yes"], body: Data())
        }, success: { _, _ in failed.fulfill() }, failure: { operation, _ in
            XCTAssertNil(operation)
            failed.fulfill()
        })
        XCTAssertNil(operation)
        wait(for: [failed], timeout: 10)
        XCTAssertTrue(server.requests.isEmpty, "\(server.requests.map(\.body))")
    }
}
