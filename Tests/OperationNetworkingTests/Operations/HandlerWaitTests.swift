import Foundation
@testable import OperationNetworking
import XCTest

/// A synchronous wait inside a handler, on the library's callback queue, waits and then sees the
/// result (issue 58): the two wrappers' patterns AFN apps ported, AFNetworking-Synchronous and a
/// Swift app's `addOperations(_:waitUntilFinished: true)`. Before, the wait returned at once and the
/// wrappers reported `success(nil)`.
final class HandlerWaitTests: ServerTestCase {
    /// What a handler saw after its synchronous wait.
    private struct Seen: Sendable {
        var finished = false
        var body: Data?
        var errorCode: Int?
        var onCallbackQueue = false
    }

    /// Runs an operation for `outer` whose success handler calls `body` (on the callback queue) and
    /// returns what `body` returned.
    private func insideHandler(_ outer: String = "/echo", _ body: @escaping @Sendable () -> Seen) -> Seen? {
        let operation = HTTPRequestOperation(request: request(outer))
        let box = Protected<Seen?>(nil)
        let done = expectation(description: "outer handler")
        operation.setCompletionBlockWithSuccess({ _, _ in
            box.withLock { $0 = body() }
            done.fulfill()
        }, failure: { _, _ in done.fulfill() })
        operation.start()
        wait(for: [done], timeout: 15)
        return box.withLock { $0 }
    }

    private static func seen(_ operation: HTTPRequestOperation) -> Seen {
        Seen(finished: operation.isFinished, body: operation.responseObject as? Data,
             errorCode: (operation.error as NSError?)?.code, onCallbackQueue: CallbackQueues.isOnCallbackQueue)
    }

    /// AFNetworking-Synchronous: `start()`, then `waitUntilFinished()`, then `responseObject` and
    /// `error`, from inside another operation's success handler, with the default completion queue.
    func testStartThenWaitInsideAHandlerSeesTheResult() throws {
        let inner = HTTPRequestOperation(request: request("/bytes/3000"))
        let seen = insideHandler {
            inner.start()
            inner.waitUntilFinished()
            return HandlerWaitTests.seen(inner)
        }
        let result = try XCTUnwrap(seen)
        XCTAssertTrue(result.onCallbackQueue, "the wait ran on the library's callback queue")
        XCTAssertTrue(result.finished, "the wait returned before the operation finished")
        XCTAssertEqual(result.body?.count, 3000, "responseObject after the wait")
        XCTAssertNil(result.errorCode)
    }

    /// AFNetworking-Synchronous with a queue: enqueue, then wait; a failure is seen as the error.
    func testEnqueueThenWaitInsideAHandlerSeesTheFailure() throws {
        let queue = OperationQueue()
        let inner = HTTPRequestOperation(request: request("/status/404"))
        let seen = insideHandler {
            queue.addOperation(inner)
            inner.waitUntilFinished()
            return HandlerWaitTests.seen(inner)
        }
        let result = try XCTUnwrap(seen)
        XCTAssertTrue(result.finished)
        XCTAssertEqual(result.errorCode, NSURLErrorBadServerResponse, "the 404 seen as the error after the wait")
    }

    /// The Swift app's pattern: a handler enqueues operations with `addOperations(_:waitUntilFinished:
    /// true)` and reads their results, one of them depending on another (whose handlers, too, run on
    /// the callback queue the handler blocks), each with handlers of its own, none of them overlapping.
    func testAddOperationsWaitingInsideAHandlerSeesEveryResult() throws {
        let queue = OperationQueue()
        let running = Protected(0)
        let overlapped = Protected(false)
        let handlerRuns = Protected(0)
        let operations = (0..<4).map { index in
            let operation = HTTPRequestOperation(request: request("/bytes/\(1000 + index)"))
            operation.setCompletionBlockWithSuccess({ _, _ in
                let now = running.withLock { $0 += 1; return $0 }
                if now > 1 { overlapped.withLock { $0 = true } }
                handlerRuns.withLock { $0 += 1 }
                running.withLock { $0 -= 1 }
            }, failure: nil)
            return operation
        }
        operations[3].addDependency(operations[0])
        let seen = insideHandler {
            queue.addOperations(operations, waitUntilFinished: true)
            return Seen(finished: operations.allSatisfy(\.isFinished),
                        body: operations.compactMap { $0.responseObject as? Data }.reduce(Data(), +),
                        errorCode: operations.compactMap { ($0.error as NSError?)?.code }.first,
                        onCallbackQueue: CallbackQueues.isOnCallbackQueue)
        }
        let result = try XCTUnwrap(seen)
        XCTAssertTrue(result.finished, "addOperations(_:waitUntilFinished: true) returned before they finished")
        XCTAssertEqual(result.body?.count, 1000 + 1001 + 1002 + 1003)
        XCTAssertNil(result.errorCode)
        XCTAssertEqual(handlerRuns.withLock { $0 }, 4, "each operation's handler ran inside the wait")
        XCTAssertFalse(overlapped.withLock { $0 }, "callbacks overlapped")
    }

    /// Inside an operation's own handler the wait cannot end (the operation finishes once the handler
    /// returned): it returns, with the outcome the handler was given already there.
    func testWaitInsideTheOperationsOwnHandlerReturnsWithItsOutcome() throws {
        let operation = HTTPRequestOperation(request: request("/bytes/500"))
        let box = Protected<Seen?>(nil)
        let done = expectation(description: "handler")
        operation.setCompletionBlockWithSuccess({ operation, _ in
            operation.waitUntilFinished()
            box.withLock { $0 = HandlerWaitTests.seen(operation) }
            done.fulfill()
        }, failure: { _, _ in done.fulfill() })
        operation.start()
        wait(for: [done], timeout: 10)
        let result = try XCTUnwrap(box.withLock { $0 })
        XCTAssertEqual(result.body?.count, 500)
        XCTAssertNil(result.errorCode)
        operation.waitUntilFinished()   // off the callback queue: Foundation's wait
        XCTAssertTrue(operation.isFinished)
    }
}
