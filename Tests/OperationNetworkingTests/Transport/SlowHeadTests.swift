import Foundation
@testable import OperationNetworking
import XCTest

/// The no-progress timeout counts every header line as activity (the header callback stamps each
/// one), so a head that arrives slowly but steadily is received, and one that stops midway times out.
final class SlowHeadTests: LibraryTestCase {
    private func request(_ server: RawServer, timeout: TimeInterval) throws -> URLRequest {
        var request = URLRequest(url: try XCTUnwrap(server.url))
        request.timeoutInterval = timeout
        return request
    }

    /// Eight header lines 200 ms apart (1.6 s in all) under a 0.6 s timeout: never 0.6 s without a line.
    func testAHeadSlowerThanTheTimeoutButNeverStalledIsReceived() throws {
        let lines = ["HTTP/1.1 200 OK\r\n"] + (1...8).map { "X-Line-\($0): value \($0)\r\n" }
            + ["Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"]
        let server = try XCTUnwrap(RawServer(pieces: lines.map { Array($0.utf8) }, pauseMilliseconds: 200))
        defer { server.stop() }
        let operation = HTTPRequestOperation(request: try request(server, timeout: 0.6))
        let outcome = run(operation, timeout: 15)
        XCTAssertNil(outcome.error, "\(String(describing: outcome.error))")
        XCTAssertEqual(operation.response?.statusCode, 200)
        for index in 1...8 {
            XCTAssertEqual(operation.response?.value(forHTTPHeaderField: "X-Line-\(index)"), "value \(index)")
        }
        XCTAssertEqual(operation.responseData, Data("hello".utf8))
    }

    /// A status line and one field, then silence: the timeout runs from the last line.
    func testAHeadThatStopsMidwayTimesOut() throws {
        let server = try XCTUnwrap(RawServer(pieces: [Array("HTTP/1.1 200 OK\r\n".utf8), Array("X-Line: 1\r\n".utf8)],
                                             pauseMilliseconds: 100, holdsOpen: true))
        defer { server.stop() }
        let started = Date()
        let outcome = run(HTTPRequestOperation(request: try request(server, timeout: 0.5)), timeout: 15)
        XCTAssertEqual(outcome.urlErrorCode, .timedOut, "\(String(describing: outcome.error))")
        XCTAssertLessThan(Date().timeIntervalSince(started), 5)
    }
}
