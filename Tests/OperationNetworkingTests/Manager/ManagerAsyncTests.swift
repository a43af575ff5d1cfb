import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A manager that signs every request in the per-method hook, as apps do.
private final class HeaderSigningManager: HTTPRequestOperationManager, @unchecked Sendable {   // no state of its own
    override func httpRequestOperation(withHTTPMethod method: String, URLString: String, parameters: Any?,
                                       success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        guard let built = super.httpRequestOperation(withHTTPMethod: method, URLString: URLString, parameters: parameters,
                                                     success: nil, failure: failure) else { return nil }
        var request = built.request
        request.setValue("signed-\(method)", forHTTPHeaderField: "X-Signature")
        var operationFailure: (@Sendable (HTTPRequestOperation, Error) -> Void)?
        if let failure { operationFailure = { operation, error in failure(operation, error) } }
        return httpRequestOperation(with: request, success: success, failure: operationFailure)
    }
}

/// An actor of the caller's own, awaiting the manager in Swift 6 mode: compiling this is the test that
/// results cross into the actor without Sendable diagnostics.
private actor APIClient {
    let manager: HTTPRequestOperationManager
    var lastObject: Any?

    init(manager: HTTPRequestOperationManager) { self.manager = manager }

    func load() async throws -> (EchoDocument, Int, String?) {
        let echo = try await manager.GET("echo", parameters: ["who": "actor"], as: EchoDocument.self)
        let object = try await manager.POST("echo", parameters: ["a": "b"])
        lastObject = object   // a `sending` result is the actor's to keep
        let head = try await manager.HEAD("echo")
        return (echo, head.statusCode, (object as? [String: Any])?["method"] as? String)
    }
}

/// The manager's async methods on the wire.
final class ManagerAsyncTests: ServerTestCase {
    private var manager: HTTPRequestOperationManager!

    override func setUpWithError() throws {
        try super.setUpWithError()
        manager = HTTPRequestOperationManager(baseURL: server.baseURL)
    }

    func testEveryMethodGoesThroughThePerMethodHook() async throws {
        let manager = HeaderSigningManager(baseURL: server.baseURL)
        let get = try await withTimeout { try await SendableAny(manager.GET("echo", parameters: ["q": "1"])) }
        XCTAssertEqual((get.value as? [String: Any])?["uri"] as? String, "/echo?q=1")
        _ = try await withTimeout { try await SendableAny(manager.POST("echo", parameters: ["p": "1"])) }
        _ = try await withTimeout { try await SendableAny(manager.PUT("echo", parameters: ["p": "2"])) }
        _ = try await withTimeout { try await SendableAny(manager.PATCH("echo", parameters: ["p": "3"])) }
        _ = try await withTimeout { try await SendableAny(manager.DELETE("echo", parameters: ["d": "4"])) }
        _ = try await withTimeout { try await manager.HEAD("echo") }
        let requests = server.requests
        XCTAssertEqual(requests.map(\.method), ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
        XCTAssertEqual(requests.map { $0.header("X-Signature") ?? "" },
                       ["signed-GET", "signed-POST", "signed-PUT", "signed-PATCH", "signed-DELETE", "signed-HEAD"])
        XCTAssertEqual(requests.map { String(decoding: $0.body, as: UTF8.self) }, ["", "p=1", "p=2", "p=3", "", ""])
        XCTAssertEqual(requests[4].uri, "/echo?d=4")
    }

    func testTheAsFormsDecodeForEveryMethod() async throws {
        let manager = self.manager!
        let get = try await withTimeout { try await manager.GET("echo", parameters: ["q": "1"], as: EchoDocument.self) }
        XCTAssertEqual(get, EchoDocument(method: "GET", path: "/echo", query: ["q": "1"], body: ""))
        let post = try await withTimeout { try await manager.POST("echo", parameters: ["p": "1"], as: EchoDocument.self) }
        XCTAssertEqual(post.body, "p=1")
        let put = try await withTimeout { try await manager.PUT("echo", parameters: nil, as: EchoDocument.self) }
        XCTAssertEqual(put.method, "PUT")
        let patch = try await withTimeout { try await manager.PATCH("echo", as: EchoDocument.self) }
        XCTAssertEqual(patch.method, "PATCH")
        let delete = try await withTimeout { try await manager.DELETE("echo", as: EchoDocument.self) }
        XCTAssertEqual(delete.method, "DELETE")
        let head = try await withTimeout { try await manager.HEAD("echo") }
        XCTAssertEqual(head.statusCode, 200)
    }

    func testAnActorOfTheCallersOwnAwaitsWithoutSendableDiagnostics() async throws {
        let client = APIClient(manager: manager)
        let (echo, status, method) = try await withTimeout { try await client.load() }
        XCTAssertEqual(echo.query, ["who": "actor"])
        XCTAssertEqual(status, 200)
        XCTAssertEqual(method, "POST")
    }

    @MainActor
    func testTheMainActorAwaitsWithoutSendableDiagnostics() async throws {
        let object = try await manager.GET("echo")
        XCTAssertEqual((object as? [String: Any])?["method"] as? String, "GET")
        let decoded = try await manager.GET("echo", as: EchoDocument.self, decoder: JSONDecoder())
        XCTAssertEqual(decoded.method, "GET")
        let operation = HTTPRequestOperation(request: request("echo"))
        operation.start()
        let value = try await operation.value()
        XCTAssertNotNil(value)
    }

    func testARequestThatCannotBeBuiltThrowsTheSerializersError() async throws {
        let manager = self.manager!
        do {
            _ = try await withTimeout { try await SendableAny(manager.GET("echo", parameters: ["n": Double.nan])) }
            XCTFail("NaN cannot be encoded")
        } catch let error as NSError {
            XCTAssertEqual(error.domain, RequestSerializationErrorDomain)
            XCTAssertEqual(error.code, RequestSerializationErrorCode.unencodableParameters.rawValue)
        }
        do {
            _ = try await withTimeout { try await manager.HEAD("http://[::1") }
            XCTFail("the URL does not parse")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .badURL)
        }
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testASuspendedQueueHoldsTheRequestUntilResumed() async throws {
        let manager = self.manager!
        manager.operationQueue.isSuspended = true
        let task = Task { try await SendableAny(manager.GET("echo")) }
        let queued = await eventuallyAsync { manager.operationQueue.operationCount == 1 }
        XCTAssertTrue(queued)
        let server = self.server!
        let sent = await eventuallyAsync(timeout: 0.3) { !server.requests.isEmpty }
        XCTAssertFalse(sent, "a suspended queue must hold the request back")
        manager.operationQueue.isSuspended = false
        _ = try await withTimeout { try await task.value }
        XCTAssertEqual(server.requests.count, 1)
    }

    func testTheQueuesConcurrencyLimitAndCancelAllOperationsApply() async throws {
        let manager = self.manager!
        manager.operationQueue.maxConcurrentOperationCount = 1
        let stalled = Task { try await SendableAny(manager.GET("stall-headers")) }
        let server = self.server!
        let first = await eventuallyAsync { server.requests.count == 1 }
        XCTAssertTrue(first)
        let second = Task { try await SendableAny(manager.GET("echo")) }
        let queued = await eventuallyAsync { manager.operationQueue.operationCount == 2 }
        XCTAssertTrue(queued)
        let overtaken = await eventuallyAsync(timeout: 0.3) { server.requests.count > 1 }
        XCTAssertFalse(overtaken, "the second request must wait for the queue's one slot")
        // Foundation cancels in queue order, the running operation first, and the queue may start the
        // second before the call reaches it: suspended, the queue starts none until both are cancelled.
        manager.operationQueue.isSuspended = true
        manager.operationQueue.cancelAllOperations()
        manager.operationQueue.isSuspended = false
        for task in [stalled, second] {
            do {
                _ = try await withTimeout(5) { try await task.value }
                XCTFail("cancelAllOperations() must end the await")
            } catch let error as URLError {
                XCTAssertEqual(error.code, .cancelled)
            }
        }
        XCTAssertEqual(server.requests.map(\.path), ["/stall-headers"])
    }

    func testCancellingTheAwaitingTaskCancelsTheRequestPromptly() async throws {
        let manager = self.manager!
        let task = Task { try await SendableAny(manager.GET("stall-headers")) }
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
        let drained = await eventuallyAsync { manager.operationQueue.operationCount == 0 }
        XCTAssertTrue(drained)
    }
}
