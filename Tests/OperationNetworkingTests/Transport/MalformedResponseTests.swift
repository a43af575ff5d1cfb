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
}
