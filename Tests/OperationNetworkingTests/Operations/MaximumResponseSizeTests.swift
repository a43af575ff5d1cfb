import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `maximumResponseSize` bounds the body an operation accepts, counted after decoding (so a small
/// compressed response cannot inflate without bound), and fails as early as the limit is known.
final class MaximumResponseSizeTests: ServerTestCase {
    private func operation(_ path: String, limit: Int64?) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request(path))
        operation.maximumResponseSize = limit
        return operation
    }

    func testADecompressedBodyPastTheLimitFails() {
        let limited = operation("/gzip", limit: 5_000)   // 11,000 bytes once inflated, far fewer on the wire
        XCTAssertEqual(run(limited).urlErrorCode, .dataLengthExceedsMaximum)
        let roomy = operation("/gzip", limit: 20_000)
        XCTAssertTrue(run(roomy).isSuccess)
        XCTAssertEqual(roomy.responseData?.count, 11_000)
    }

    func testAnAnnouncedLengthPastTheLimitFailsAtTheHead() {
        // Slow enough that reading the body would take minutes: only the head can have stopped it.
        let limited = operation("/bytes/10000000?chunkSize=1000&chunkDelayMs=50", limit: 1_000)
        let started = Date()
        let outcome = run(limited, timeout: 5)
        XCTAssertEqual(outcome.urlErrorCode, .dataLengthExceedsMaximum)
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
        XCTAssertTrue(outcome.error?.localizedDescription.contains("1000 bytes") ?? false)
    }

    func testAnUnannouncedBodyPastTheLimitFailsAndNoLimitIsTheDefault() {
        XCTAssertEqual(run(operation("/chunked/100000", limit: 50_000)).urlErrorCode, .dataLengthExceedsMaximum)
        let unlimited = operation("/chunked/100000", limit: nil)
        XCTAssertNil(HTTPRequestOperation(request: request("/chunked/1")).maximumResponseSize)
        XCTAssertTrue(run(unlimited).isSuccess)
        XCTAssertEqual(unlimited.responseData, deterministicBytes(100_000))
    }

    func testTheManagerCopiesItsLimitOntoEachOperation() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.url("/"))
        manager.responseSerializer = HTTPResponseSerializer()
        manager.maximumResponseSize = 100
        let failed = expectation(description: "failure")
        let operation = try XCTUnwrap(manager.GET("bytes/1000", parameters: nil, success: { _, _ in
            XCTFail("a body past the limit succeeded")
        }, failure: { _, error in
            XCTAssertEqual((error as? URLError)?.code, .dataLengthExceedsMaximum)
            failed.fulfill()
        }))
        XCTAssertEqual(operation.maximumResponseSize, 100)
        wait(for: [failed], timeout: 10)
        XCTAssertEqual((manager.copy() as? HTTPRequestOperationManager)?.maximumResponseSize, 100)
    }
}
