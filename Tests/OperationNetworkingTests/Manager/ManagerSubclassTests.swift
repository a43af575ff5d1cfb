import Foundation
import OperationNetworking
import XCTest

/// A manager subclass as AFN 2.x apps wrote them: a configured `+manager`, a signing per-method
/// hook, overridden convenience methods.
final class SigningManager: HTTPRequestOperationManager, @unchecked Sendable {   // no state of its own
    /// The subclass's initializer configures every instance, `manager()` included.
    required init(baseURL: URL?) {
        super.init(baseURL: baseURL)
        requestSerializer.setValue("subclass", forHTTPHeaderField: "X-Configured-By")
    }

    // `init()`, `init?(coder:)` and `manager()` are inherited: they all go through `init(baseURL:)`.

    /// Signs every request made through the convenience methods.
    override func httpRequestOperation(withHTTPMethod method: String, URLString: String, parameters: Any?,
                                       success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        var signed = (parameters as? [String: Any]) ?? [:]
        signed["signature"] = "\(method)-signed"
        return super.httpRequestOperation(withHTTPMethod: method, URLString: URLString, parameters: signed,
                                          success: success, failure: failure)
    }

    /// An app-level override of GET (AFN apps added logging or defaults here).
    override func GET(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        let operation = super.GET(URLString, parameters: parameters, success: success, failure: failure)
        operation?.userInfo["overridden"] = true
        return operation
    }
}

final class ManagerSubclassTests: ServerTestCase {
    func testManagerIsMadeThroughTheSubclassInitializer() {
        let manager = SigningManager.manager()
        XCTAssertTrue(type(of: manager) == SigningManager.self)
        XCTAssertEqual(manager.requestSerializer.value(forHTTPHeaderField: "X-Configured-By"), "subclass")
    }

    func testEveryConvenienceMethodGoesThroughThePerMethodHook() throws {
        let manager = SigningManager(baseURL: server.baseURL)
        manager.responseSerializer = HTTPResponseSerializer()
        let done = expectation(description: "all methods")
        done.expectedFulfillmentCount = 6
        let success: HTTPRequestOperationManager.Success = { _, _ in done.fulfill() }
        let failure: HTTPRequestOperationManager.Failure = { _, error in XCTFail("\(error)"); done.fulfill() }
        let get = manager.GET("echo", parameters: ["a": 1], success: success, failure: failure)
        XCTAssertEqual(get?.userInfo["overridden"] as? Bool, true, "GET is open")
        manager.HEAD("echo", parameters: nil, success: { _ in done.fulfill() }, failure: failure)
        manager.POST("echo", parameters: ["a": 1], success: success, failure: failure)
        manager.PUT("echo", parameters: nil, success: success, failure: failure)
        manager.PATCH("echo", parameters: nil, success: success, failure: failure)
        manager.DELETE("echo", parameters: nil, success: success, failure: failure)
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.requests.count, 6)
        for logged in server.requests {
            let signature = "signature=\(logged.method)-signed"
            let sent = (logged.uri.split(separator: "?").dropFirst().first.map(String.init) ?? "")
                + String(decoding: logged.body, as: UTF8.self)
            XCTAssertTrue(sent.contains(signature), "\(logged.method) went through the hook: \(sent)")
            XCTAssertEqual(logged.header("X-Configured-By"), "subclass")
        }
    }

    func testTheHookBuildsWithoutEnqueueingAndReportsUnbuildableRequests() {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        let operation = manager.httpRequestOperation(withHTTPMethod: "GET", URLString: "echo", parameters: ["q": 1],
                                                     success: nil, failure: nil)
        XCTAssertEqual(operation?.request.url?.query, "q=1")
        XCTAssertEqual(manager.operationQueue.operationCount, 0, "the hook does not enqueue")
        let failed = expectation(description: "failure(nil, error)")
        let none = manager.httpRequestOperation(withHTTPMethod: "GET", URLString: "http://exa mple.com/<>", parameters: nil,
                                                success: nil, failure: { operation, error in
            XCTAssertNil(operation)
            XCTAssertEqual((error as? URLError)?.code, .badURL)
            failed.fulfill()
        })
        XCTAssertNil(none)
        wait(for: [failed], timeout: 5)
    }

    func testMultipartPOSTTakesAnyParameters() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.responseSerializer = HTTPResponseSerializer()
        let parameters: Any? = ["count": 3, "name": "ada"] as [String: Any]
        let done = expectation(description: "upload")
        manager.POST("upload", parameters: parameters, constructingBodyWith: { form in
            form.appendPart(withFormData: Data("x".utf8), name: "extra")
        }, success: { _, _ in done.fulfill() }, failure: { _, error in XCTFail("\(error)"); done.fulfill() })
        wait(for: [done], timeout: 5)
        let body = String(decoding: try XCTUnwrap(server.requests.first).body, as: UTF8.self)
        XCTAssertTrue(body.contains("name=\"count\"\r\n\r\n3\r\n"), body)
        XCTAssertTrue(body.contains("name=\"name\"\r\n\r\nada\r\n"), body)
    }
}
