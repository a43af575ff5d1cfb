import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A request body stream must keep the length its `Content-Length` declares: a short one fails at
/// once (the server would wait for the missing bytes until the timeout), a long one fails rather than
/// sending a cut body as a success.
final class BodyLengthTests: ServerTestCase {
    private func upload(_ body: Data, declaring length: Int) -> (Outcome, TimeInterval) {
        var request = request("/upload", method: "POST", timeout: 30)
        request.httpBodyStream = InputStream(data: body)
        request.setValue(String(length), forHTTPHeaderField: "Content-Length")
        let started = Date()
        let (_, outcome) = run(request, timeout: 10)
        return (outcome, Date().timeIntervalSince(started))
    }

    func testAStreamShorterThanItsContentLengthFailsAtOnce() {
        let (outcome, elapsed) = upload(deterministicBytes(10_000), declaring: 20_000)
        XCTAssertEqual(outcome.urlErrorCode, .requestBodyStreamExhausted)
        XCTAssertLessThan(elapsed, 5, "it failed when the stream ended, not at the 30 s timeout")
        XCTAssertTrue(outcome.error?.localizedDescription.contains("10000 of the 20000") ?? false,
                      "\(String(describing: outcome.error))")
    }

    func testAStreamLongerThanItsContentLengthFails() {
        let (outcome, _) = upload(deterministicBytes(30_000), declaring: 20_000)
        XCTAssertEqual(outcome.urlErrorCode, .requestBodyStreamExhausted)
        XCTAssertTrue(server.requests(path: "/upload").isEmpty, "no complete request reached the server")
    }

    func testAStreamOfExactlyItsContentLengthIsSent() throws {
        let (outcome, _) = upload(deterministicBytes(20_000), declaring: 20_000)
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertEqual(try XCTUnwrap(server.requests(path: "/upload").first).body, deterministicBytes(20_000))
    }
}
