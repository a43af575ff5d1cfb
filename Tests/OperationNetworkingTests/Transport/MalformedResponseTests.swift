import CCurl
import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import OperationNetworking
import XCTest

/// Responses that break HTTP's framing fail with the code that says so — never with
/// `.networkConnectionLost`, which callers and retry policies take for a transient failure.
final class MalformedResponseTests: LibraryTestCase {
    private func code(for response: String, file: StaticString = #filePath, line: UInt = #line) throws -> URLError? {
        let server = try XCTUnwrap(RawServer(response), file: file, line: line)
        defer { server.stop() }
        var request = URLRequest(url: try XCTUnwrap(server.url, file: file, line: line))
        request.timeoutInterval = 10
        let outcome = run(HTTPRequestOperation(request: request))
        return outcome.error as? URLError
    }

    func testAHeaderLineBeyondLibcurlsLimitCannotBeParsed() throws {
        let error = try code(for: "HTTP/1.1 200 OK\r\nX-Big: \(String(repeating: "a", count: 200_000))\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(error?.code, .cannotParseResponse, "\(String(describing: error))")
        let message = error?.localizedDescription ?? ""
        XCTAssertTrue(message.contains("header line"), "the message says what happened: \(message)")
        XCTAssertFalse(message.lowercased().contains("out of memory"), message)
        XCTAssertEqual(error?.userInfo[CurlErrorCodeKey] as? Int, Int(CURLE_OUT_OF_MEMORY.rawValue), "the curl code is kept")
    }

    func testAGarbageStatusLineIsABadServerResponse() throws {
        let error = try code(for: "HTTP/1.1 abc\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(error?.code, .badServerResponse, "\(String(describing: error))")
    }

    func testAnHTTP09ReplyIsABadServerResponse() throws {
        let error = try code(for: "hello, this is no HTTP response\n")
        XCTAssertEqual(error?.code, .badServerResponse, "\(String(describing: error))")
    }

    func testBrokenChunkedFramingCannotBeParsed() throws {
        let error = try code(for: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")
        XCTAssertEqual(error?.code, .cannotParseResponse, "\(String(describing: error))")
    }

    func testConflictingContentLengthsCannotBeParsed() throws {
        let error = try code(for: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello!!")
        XCTAssertEqual(error?.code, .cannotParseResponse, "\(String(describing: error))")
    }

    func testATruncatedBodyUnderAnOverflowingContentLengthIsLost() throws {
        let error = try code(for: "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nhello")
        XCTAssertNotNil(error, "five bytes of an announced 10^23 are not a success")
        XCTAssertTrue(error?.code == .networkConnectionLost || error?.code == .cannotParseResponse, "\(String(describing: error))")
    }

    func testRunningOutOfDescriptorsSaysSo() throws {
        let server = try XCTUnwrap(RawServer("HTTP/1.1 204 No Content\r\n\r\n"))
        defer { server.stop() }
        // The library's threads and queues exist before the descriptor table is emptied (Dispatch
        // itself stops the process when it cannot make its own descriptors).
        XCTAssertNil(run(HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(server.url)))).error)
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(server.url)))
        let (done, box) = recordOutcome(of: operation)
        var saved = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)
        var none = saved
        none.rlim_cur = 0
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &none), 0)
        operation.start()
        wait(for: [done], timeout: 10)
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)
        let error = box.value?.error as? URLError
        XCTAssertEqual(error?.code, .cannotConnectToHost)
        XCTAssertTrue(error?.localizedDescription.contains("EMFILE") ?? false, "\(String(describing: error))")
        XCTAssertEqual((error?.userInfo[NSUnderlyingErrorKey] as? NSError)?.code, Int(EMFILE))
    }

    // MARK: - Faults that already failed cleanly, kept on the wire as regressions

    func testABodyCutShortOfItsContentLengthIsLost() throws {
        let error = try code(for: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
        XCTAssertEqual(error?.code, .networkConnectionLost, "\(String(describing: error))")
    }

    func testANulByteInAHeaderIsRefused() throws {
        let error = try code(for: "HTTP/1.1 200 OK\r\nX-Evil: a\u{0}b\r\nContent-Length: 2\r\n\r\nok")
        XCTAssertNotNil(error, "a header with a NUL byte was accepted")
        XCTAssertTrue([.badServerResponse, .cannotParseResponse].contains(error?.code), "\(String(describing: error))")
    }

    func testARedirectToAFileURLIsNotFollowed() throws {
        let error = try code(for: "HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(error?.code, .unsupportedURL, "\(String(describing: error))")
    }

    func testTenThousandInterimResponsesBeforeTheAnswer() throws {
        let server = try XCTUnwrap(RawServer(String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 10_000)
            + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone"))
        defer { server.stop() }
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(server.url)))
        XCTAssertNil(run(operation).error)
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertEqual(operation.responseData, Data("done".utf8))
    }

    /// The peer answers once per connection and closes while the client keeps the connection for
    /// reuse: the next request finds it dead and must go out on a fresh one, not fail.
    func testAKeepAliveConnectionTheServerClosedIsNotAFailure() throws {
        let server = try XCTUnwrap(RawServer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        defer { server.stop() }
        for _ in 0..<5 {
            let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(server.url)))
            XCTAssertNil(run(operation).error)
            XCTAssertEqual(operation.responseData, Data("ok".utf8))
        }
    }

    /// A gzip body cut 30 bytes short, with a Content-Length that matches the cut: every byte the
    /// server announced arrived, but the compressed stream never ended.
    func testATruncatedCompressedBodyCannotBeDecoded() throws {
        let cut = try XCTUnwrap(Data(base64Encoded: "H4sIAEt5BGsC/+3GsQ0AIAgAsFd4zogJic5ezxsM7dRcVTf2Py9SVQ=="))
        let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(cut.count)\r\n\r\n"
        let server = try XCTUnwrap(RawServer(response: Array(head.utf8) + Array(cut)))
        defer { server.stop() }
        let outcome = run(HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(server.url))))
        XCTAssertEqual(outcome.urlErrorCode, .cannotDecodeContentData, "\(String(describing: outcome.error))")
    }

    /// Serves `body` with `Content-Encoding: encoding` and returns what the operation delivered.
    private func decoded(_ base64: String, encoding: String) throws -> (Data?, URLError?) {
        let body = try XCTUnwrap(Data(base64Encoded: base64))
        let head = "HTTP/1.1 200 OK\r\nContent-Encoding: \(encoding)\r\nContent-Length: \(body.count)\r\n\r\n"
        let server = try XCTUnwrap(RawServer(response: Array(head.utf8) + Array(body)))
        defer { server.stop() }
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(server.url)))
        let outcome = run(operation)
        return (operation.responseData, outcome.error as? URLError)
    }

    func testCompressedBodiesAreInflatedWhateverTheirFraming() throws {
        let deflated = Data(String(repeating: "deflate body ", count: 50).utf8)
        XCTAssertEqual(try decoded("eJxLSU3LSSxJVUjKT6lUSBnljHIGigMAGT7uFw==", encoding: "deflate").0, deflated, "zlib-wrapped")
        XCTAssertEqual(try decoded("S0lNy0ksSVVIyk+pVEgZ5YxyBooDAA==", encoding: "deflate").0, deflated, "raw deflate")
        XCTAssertEqual(try decoded("H4sIAOd5BGsC/0vLLCouUchNzU1KLbJWAABIe4lnDgAAAB+LCADneQRrAv8rTk3Oz0tRyE3NTUotAgAkdPqfDQAAAA==",
                                   encoding: "gzip").0, Data("first member; second member".utf8), "two gzip members")
        let (data, error) = try decoded(Data(repeating: 0x41, count: 64).base64EncodedString(), encoding: "gzip")
        XCTAssertNil(data)
        XCTAssertEqual(error?.code, .cannotDecodeContentData, "bytes that are not gzip at all")
    }
}
