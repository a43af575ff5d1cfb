import Dispatch
import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Serializing one response never delays another: a serializer that does not return (a hostile body,
/// a slow custom decoder) holds its own operation only, while the requests beside it, through the
/// same manager and queue, complete and run their handlers.
final class SerializationIsolationTests: ServerTestCase {
    /// Blocks in `responseObject(for:data:)` until the test lets it go.
    private final class BlockingSerializer: HTTPResponseSerializer, @unchecked Sendable {   // semaphores only
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)

        override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
            entered.signal()
            release.wait()
            return try super.responseObject(for: response, data: data)
        }
    }

    func testASerializationThatDoesNotReturnHoldsOnlyItsOwnOperation() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        let blocking = BlockingSerializer()
        // Whatever happens below, the blocked serializer returns before the test ends.
        defer { blocking.release.signal() }

        let slowHandled = expectation(description: "the slow operation's handler")
        let slow = manager.httpRequestOperation(with: request("/bytes/1000"), success: { _, object in
            XCTAssertEqual((object as? Data)?.count, 1000)
            slowHandled.fulfill()
        }, failure: { _, error in
            XCTFail("\(error)")
            slowHandled.fulfill()
        })
        slow.responseSerializer = blocking
        manager.operationQueue.addOperation(slow)
        XCTAssertEqual(blocking.entered.wait(timeout: .now() + 10), .success, "the slow serialization never started")

        let quickHandled = expectation(description: "100 quick handlers")
        quickHandled.expectedFulfillmentCount = 100
        for index in 0..<100 {
            let quick = manager.httpRequestOperation(with: request("/status/200?body=%7B%22n%22:\(index)%7D"), success: { _, object in
                XCTAssertEqual((object as? [String: Any])?["n"] as? Int, index)
                quickHandled.fulfill()
            }, failure: { _, error in
                XCTFail("\(error)")
                quickHandled.fulfill()
            })
            manager.operationQueue.addOperation(quick)
        }
        wait(for: [quickHandled], timeout: 30)
        XCTAssertFalse(slow.isFinished, "the slow operation finished before its serializer returned")
        XCTAssertEqual(server.requests.count, 101)

        blocking.release.signal()
        wait(for: [slowHandled], timeout: 10)
    }
}
