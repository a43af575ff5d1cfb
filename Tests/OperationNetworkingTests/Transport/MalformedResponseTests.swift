import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import OperationNetworking
import XCTest

/// Responses that break HTTP's framing fail with the code that says so — never with
/// `.networkConnectionLost`, which callers and retry policies take for a transient failure.
final class MalformedResponseTests: XCTestCase {
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
}
