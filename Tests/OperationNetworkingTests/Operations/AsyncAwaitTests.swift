import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `HTTPRequestOperation.value()` and `decode(_:decoder:)`, on the wire.
final class AsyncAwaitTests: ServerTestCase {
    private struct Person: Decodable, Sendable {
        let name: String
        let id: Int
    }

    private func jsonOperation(_ path: String) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request(path))
        operation.responseSerializer = JSONResponseSerializer()
        return operation
    }

    func testValueReturnsTheResponseObjectAfterTheHandlersRan() async throws {
        let operation = jsonOperation("echo?x=1")
        let handlerRan = Recorder<String>()
        operation.setCompletionBlockWithSuccess({ _, _ in handlerRan.append("success") }, failure: nil)
        let queue = OperationQueue()
        queue.addOperation(operation)
        let object = try await withTimeout { try await SendableAny(operation.value()) }
        XCTAssertEqual(handlerRan.all, ["success"], "value() returned before the success block ran")
        XCTAssertTrue(operation.isFinished)
        let echo = try XCTUnwrap(object.value as? [String: Any])
        XCTAssertEqual(echo["uri"] as? String, "/echo?x=1")
        XCTAssertEqual(server.requests.map(\.uri), ["/echo?x=1"])
    }

    func testValueThrowsTheOperationsError() async throws {
        let operation = jsonOperation("status/404")
        operation.start()
        do {
            _ = try await withTimeout { try await SendableAny(operation.value()) }
            XCTFail("a 404 must throw")
        } catch let error as NSError {
            XCTAssertEqual(error.domain, ResponseSerializationErrorDomain)
            XCTAssertEqual(error.code, NSURLErrorBadServerResponse)
        }
    }

    func testWaitingDoesNotStartTheOperationAndAFinishedOneReturnsAtOnce() throws {
        let operation = jsonOperation("echo")
        let returned = expectation(description: "value() returned")
        Task {
            _ = try await operation.value()
            returned.fulfill()
        }
        let server = self.server!
        XCTAssertFalse(eventually(timeout: 0.3) { !server.requests.isEmpty }, "awaiting started the operation")
        XCTAssertFalse(operation.isExecuting)
        XCTAssertFalse(operation.isFinished)
        operation.start()
        wait(for: [returned], timeout: 10)

        // Finished now: a second await returns at once, without a second request.
        let again = expectation(description: "second value() returned")
        Task {
            _ = try await operation.value()
            again.fulfill()
        }
        wait(for: [again], timeout: 1)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testDecodeDecodesTheBody() async throws {
        let operation = jsonOperation("status/200?body=%7B%22name%22%3A%22ada%22%2C%22id%22%3A7%7D")
        operation.start()
        let person = try await withTimeout { try await operation.decode(Person.self) }
        XCTAssertEqual(person.name, "ada")
        XCTAssertEqual(person.id, 7)
    }

    func testADecodingFailureCarriesTheDecodingErrorTheBodyAndTheResponse() async throws {
        let operation = jsonOperation("status/200?body=%7B%22name%22%3A1%7D")
        operation.start()
        do {
            _ = try await withTimeout { try await operation.decode(Person.self) }
            XCTFail("the body does not decode as Person")
        } catch let error as NSError {
            XCTAssertEqual(error.domain, ResponseSerializationErrorDomain)
            XCTAssertEqual(error.code, NSURLErrorCannotDecodeContentData)
            XCTAssertTrue(error.userInfo[NSUnderlyingErrorKey] is DecodingError)
            XCTAssertEqual(error.userInfo[FailingURLResponseDataErrorKey] as? Data, Data(#"{"name":1}"#.utf8))
            XCTAssertEqual((error.userInfo[FailingURLResponseErrorKey] as? HTTPURLResponse)?.statusCode, 200)
        }
    }

    func testDecodeThrowsTheValidationErrorBeforeDecoding() async throws {
        let operation = jsonOperation("status/500?body=%7B%22name%22%3A%22ada%22%2C%22id%22%3A7%7D")
        operation.start()
        do {
            _ = try await withTimeout { try await operation.decode(Person.self) }
            XCTFail("a 500 must not decode")
        } catch let error as NSError {
            XCTAssertEqual(error.domain, ResponseSerializationErrorDomain)
            XCTAssertEqual(error.code, NSURLErrorBadServerResponse)
        }
    }

    func testCancellingTheAwaitingTaskCancelsTheRunningOperationPromptly() async throws {
        let operation = jsonOperation("stall-headers")
        OperationQueue().addOperation(operation)
        let task = Task { try await SendableAny(operation.value()) }
        let server = self.server!
        let sent = await eventuallyAsync { !server.requests.isEmpty }
        XCTAssertTrue(sent)
        let cancelledAt = Date()
        task.cancel()
        do {
            _ = try await withTimeout(5) { try await task.value }
            XCTFail("a cancelled task must throw")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertLessThan(Date().timeIntervalSince(cancelledAt), 1)
        XCTAssertTrue(operation.isCancelled)
        XCTAssertTrue(operation.isFinished)
    }

    func testCancellingTheAwaitingTaskOfAnOperationNotYetStartedThrowsAtOnce() async throws {
        let operation = jsonOperation("echo")
        let queue = OperationQueue()
        queue.isSuspended = true
        queue.addOperation(operation)
        let task = Task { try await SendableAny(operation.value()) }
        task.cancel()
        do {
            _ = try await withTimeout(5) { try await task.value }
            XCTFail("a cancelled task must throw")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertTrue(operation.isCancelled)
        XCTAssertTrue(server.requests.isEmpty)
        queue.isSuspended = false
        let drained = await eventuallyAsync { queue.operationCount == 0 }
        XCTAssertTrue(drained)
        XCTAssertTrue(server.requests.isEmpty, "a cancelled operation must not reach the network")
    }
}
