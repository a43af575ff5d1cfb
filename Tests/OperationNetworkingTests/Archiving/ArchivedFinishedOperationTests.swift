import Foundation
import OperationNetworking
import XCTest

/// A finished operation archived and restored is finished, with its outcome (issue 58): AFN 2.x
/// archived it as finished, and a response cache of archived operations reads `responseObject` from
/// the restored ones.
final class ArchivedFinishedOperationTests: ServerTestCase {
    private func archivedAndRestored(_ operation: HTTPRequestOperation) throws -> HTTPRequestOperation {
        try SafeArchive.unarchive(HTTPRequestOperation.self, from: try SafeArchive.archive(operation))
    }

    /// A success comes back finished, with its response and its serialized object, and never runs again:
    /// not by `start()`, nor by a queue (which finishes it at once).
    func testSucceededOperationComesBackFinishedWithItsResponseObject() throws {
        let operation = HTTPRequestOperation(request: request("/echo?name=value"))
        operation.responseSerializer = JSONResponseSerializer()
        XCTAssertTrue(run(operation).isSuccess)
        let object = try XCTUnwrap(operation.responseObject as? [String: Any])

        let restored = try archivedAndRestored(operation)
        XCTAssertTrue(restored.isFinished)
        XCTAssertFalse(restored.isExecuting)
        XCTAssertFalse(restored.isCancelled)
        XCTAssertFalse(restored.isPaused)
        XCTAssertNil(restored.error)
        XCTAssertEqual(restored.response?.statusCode, 200)
        XCTAssertEqual(restored.responseData, operation.responseData)
        XCTAssertTrue(restored.responseSerializer is JSONResponseSerializer, "the serializer is archived")
        let restoredObject = try XCTUnwrap(restored.responseObject as? [String: Any], "responseObject after a restore")
        XCTAssertEqual(NSDictionary(dictionary: restoredObject), NSDictionary(dictionary: object))

        let sent = server.requests(path: "/echo").count
        restored.start()
        let queue = OperationQueue()
        let again = try archivedAndRestored(operation)
        queue.addOperation(again)
        queue.waitUntilAllOperationsAreFinished()
        again.waitUntilFinished()
        XCTAssertEqual(server.requests(path: "/echo").count, sent, "a restored finished operation sends nothing")
        XCTAssertTrue(restored.isFinished)
        XCTAssertNotNil(restored.responseObject)
        XCTAssertNotNil(again.responseObject)
    }

    /// A failure comes back finished with its error (domain and code) and the same response object; a
    /// cancelled operation comes back cancelled, without one.
    func testFailedAndCancelledOperationsComeBackFinishedWithTheirErrors() throws {
        let failed = HTTPRequestOperation(request: request("/status/404"))
        XCTAssertFalse(run(failed).isSuccess)
        let error = try XCTUnwrap(failed.error as NSError?)
        let restoredFailed = try archivedAndRestored(failed)
        XCTAssertTrue(restoredFailed.isFinished)
        XCTAssertEqual(restoredFailed.response?.statusCode, 404)
        XCTAssertEqual((restoredFailed.error as NSError?)?.domain, error.domain)
        XCTAssertEqual((restoredFailed.error as NSError?)?.code, error.code)
        XCTAssertEqual(restoredFailed.responseObject as? Data, failed.responseObject as? Data, "the 404's body, as before")
        XCTAssertFalse(restoredFailed.isCancelled)

        let cancelled = HTTPRequestOperation(request: request("/echo"))
        cancelled.cancel()
        XCTAssertFalse(run(cancelled).isSuccess)
        let restoredCancelled = try archivedAndRestored(cancelled)
        XCTAssertTrue(restoredCancelled.isFinished)
        XCTAssertTrue(restoredCancelled.isCancelled)
        XCTAssertEqual((restoredCancelled.error as NSError?)?.code, NSURLErrorCancelled)
        XCTAssertNil(restoredCancelled.responseObject)
    }

    /// A copy of a restored finished operation is the way to run the request again.
    func testCopyOfRestoredFinishedOperationRunsAgain() throws {
        let operation = HTTPRequestOperation(request: request("/echo"))
        XCTAssertTrue(run(operation).isSuccess)
        let copy = try XCTUnwrap(try archivedAndRestored(operation).copy() as? HTTPRequestOperation)
        XCTAssertFalse(copy.isFinished)
        XCTAssertNil(copy.responseData)
        let sent = server.requests(path: "/echo").count
        XCTAssertTrue(run(copy).isSuccess)
        XCTAssertEqual(server.requests(path: "/echo").count, sent + 1)
    }
}
