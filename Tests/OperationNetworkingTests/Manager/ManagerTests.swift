import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The manager: base URLs, building and enqueueing, settings handed to operations.
final class ManagerTests: ServerTestCase {
    private func manager(path: String = "") -> HTTPRequestOperationManager {
        HTTPRequestOperationManager(baseURL: URL(string: server.baseURL.absoluteString + path))
    }

    func testBaseURLGetsATrailingSlashWhenItHasAPath() {
        XCTAssertEqual(HTTPRequestOperationManager(baseURL: URL(string: "http://example.com/v1")).baseURL?.absoluteString,
                       "http://example.com/v1/")
        XCTAssertEqual(HTTPRequestOperationManager(baseURL: URL(string: "http://example.com")).baseURL?.absoluteString,
                       "http://example.com")
        XCTAssertEqual(HTTPRequestOperationManager(baseURL: URL(string: "http://example.com/v1/")).baseURL?.absoluteString,
                       "http://example.com/v1/")
        XCTAssertNil(HTTPRequestOperationManager.manager().baseURL)
    }

    /// Migration.md, "Lifetimes": `HTTPRequestOperationManager().GET(…)` in a function that returns at
    /// once still completes — the enqueued operation keeps itself and its queue alive, not the manager.
    func testAManagerThatNobodyKeepsStillCompletesItsGET() {
        let url = server.url("/echo").absoluteString
        let done = expectation(description: "GET completed")
        func fireAndForget() {
            HTTPRequestOperationManager().GET(url, parameters: nil, success: { _, _ in done.fulfill() }, failure: { _, error in
                XCTFail("\(error)")
                done.fulfill()
            })
        }
        fireAndForget()
        wait(for: [done], timeout: 5)

        weak var released: HTTPRequestOperationManager?
        let finished = expectation(description: "second GET completed")
        func fireAndForgetObserved() {
            let manager = HTTPRequestOperationManager()
            released = manager
            manager.GET(url, parameters: nil, success: { _, _ in finished.fulfill() }, failure: nil)
        }
        fireAndForgetObserved()
        XCTAssertNil(released, "nothing but the caller keeps a manager alive")
        wait(for: [finished], timeout: 5)
    }

    func testRelativeResolutionMatchesAFN() {
        let manager = HTTPRequestOperationManager(baseURL: URL(string: "http://example.com/v1/"))
        let table = [
            "foo": "http://example.com/v1/foo",
            "foo?bar=baz": "http://example.com/v1/foo?bar=baz",
            "/foo": "http://example.com/foo",
            "foo/": "http://example.com/v1/foo/",
            "/foo/": "http://example.com/foo/",
            "http://example2.com/": "http://example2.com/",
        ]
        for (relative, absolute) in table {
            XCTAssertEqual(manager.resolve(relative), absolute, relative)
        }
    }

    func testGETPutsParametersInTheQuery() throws {
        let manager = manager(path: "/api")
        let done = expectation(description: "success")
        let object = OutcomeBox()
        manager.GET("../echo", parameters: ["b": "2", "a": ["x", "y"]], success: { _, response in
            object.set(.success(SendableAny(response)))
            done.fulfill()
        }, failure: { _, error in XCTFail("\(error)"); done.fulfill() })
        wait(for: [done], timeout: 5)
        let logged = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(logged.uri, "/echo?a%5B%5D=x&a%5B%5D=y&b=2")
        XCTAssertNotNil(logged.header("User-Agent"))
        XCTAssertNotNil(logged.header("Accept-Language"))
        guard case .success(let value)? = object.value, let json = value.value as? [String: Any] else {
            return XCTFail("the default response serializer decodes JSON")
        }
        XCTAssertEqual(json["method"] as? String, "GET")
    }

    /// On the wire, numbers in the query and the form body look as AFN (NSNumber) wrote them.
    func testNumbersOnTheWireAsAFNSentThem() throws {
        let manager = manager()
        let done = expectation(description: "both requests")
        done.expectedFulfillmentCount = 2
        manager.GET("/echo", parameters: ["count": 3, "ratio": 1.5, "on": true], success: { _, _ in done.fulfill() },
                    failure: { _, error in XCTFail("\(error)"); done.fulfill() })
        manager.POST("/echo", parameters: ["count": 3, "ratio": 1.5], success: { _, _ in done.fulfill() },
                     failure: { _, error in XCTFail("\(error)"); done.fulfill() })
        wait(for: [done], timeout: 5)
        let get = try XCTUnwrap(server.requests.first { $0.method == "GET" })
        XCTAssertEqual(get.uri, "/echo?count=3&on=1&ratio=1.5")
        let post = try XCTUnwrap(server.requests.first { $0.method == "POST" })
        XCTAssertEqual(String(decoding: post.body, as: UTF8.self), "count=3&ratio=1.5")
    }

    func testPOSTSendsAFormBody() throws {
        let manager = manager()
        let done = expectation(description: "success")
        manager.POST("/echo", parameters: ["name": "a b", "n": 1], success: { _, _ in done.fulfill() },
                     failure: { _, error in XCTFail("\(error)"); done.fulfill() })
        wait(for: [done], timeout: 5)
        let logged = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(logged.method, "POST")
        XCTAssertEqual(String(decoding: logged.body, as: UTF8.self), "n=1&name=a%20b")
        XCTAssertEqual(logged.header("Content-Type"), "application/x-www-form-urlencoded")
    }

    func testPOSTWithoutParametersStillSendsAnEmptyForm() throws {
        let done = expectation(description: "success")
        manager().POST("/echo", parameters: nil, success: { _, _ in done.fulfill() }, failure: nil)
        wait(for: [done], timeout: 5)
        let logged = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(logged.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(logged.header("Content-Length"), "0")
    }

    func testEveryConvenienceMethodUsesItsVerb() {
        let manager = manager()
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = 5
        manager.PUT("/echo", parameters: ["a": 1], success: { _, _ in done.fulfill() }, failure: nil)
        manager.PATCH("/echo", parameters: ["a": 1], success: { _, _ in done.fulfill() }, failure: nil)
        manager.DELETE("/echo", parameters: ["a": 1], success: { _, _ in done.fulfill() }, failure: nil)
        manager.HEAD("/echo", parameters: nil, success: { _ in done.fulfill() }, failure: nil)
        manager.GET("/echo", parameters: nil, success: { _, _ in done.fulfill() }, failure: nil)
        wait(for: [done], timeout: 5)
        XCTAssertEqual(Set(server.requests.map(\.method)), ["PUT", "PATCH", "DELETE", "HEAD", "GET"])
        XCTAssertEqual(server.requests.first { $0.method == "DELETE" }?.uri, "/echo?a=1")
        XCTAssertEqual(server.requests.first { $0.method == "PUT" }.map { String(decoding: $0.body, as: UTF8.self) }, "a=1")
    }

    func testUnbuildableRequestReturnsNilAndCallsFailureWithoutAnOperation() {
        let manager = HTTPRequestOperationManager(baseURL: nil)
        let failed = expectation(description: "failure")
        let operation = manager.GET("http://exa mple.com/<>", parameters: nil, success: { _, _ in
            XCTFail("no success")
        }, failure: { operation, error in
            XCTAssertNil(operation)
            XCTAssertEqual((error as NSError).code, NSURLErrorBadURL)
            failed.fulfill()
        })
        XCTAssertNil(operation)
        wait(for: [failed], timeout: 5)
        XCTAssertEqual(manager.operationQueue.operationCount, 0)
    }

    func testHeaderWithLineBreakMakesTheRequestFail() {
        let manager = manager()
        manager.requestSerializer.setValue("x\r\nInjected: 1", forHTTPHeaderField: "X-Bad")
        let failed = expectation(description: "failure")
        let operation = manager.GET("/echo", parameters: nil, success: nil, failure: { operation, error in
            XCTAssertNil(operation)
            XCTAssertEqual((error as NSError).domain, RequestSerializationErrorDomain)
            failed.fulfill()
        })
        XCTAssertNil(operation)
        wait(for: [failed], timeout: 5)
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testStatusErrorCarriesResponseBodyAndObject() throws {
        let manager = manager()
        let failed = expectation(description: "failure")
        let captured = OutcomeBox()
        let objectSeen = Recorder<Bool>()
        manager.GET("/status/404", parameters: nil, success: nil, failure: { operation, error in
            captured.set(.failure(error))
            objectSeen.append((operation?.responseObject as? [String: Any])?["status"] as? Int == 404)
            failed.fulfill()
        })
        wait(for: [failed], timeout: 5)
        let error = try XCTUnwrap(captured.value?.error as NSError?)
        XCTAssertEqual(error.domain, ResponseSerializationErrorDomain)
        XCTAssertEqual(error.code, NSURLErrorBadServerResponse)
        XCTAssertEqual((error.userInfo[FailingURLResponseErrorKey] as? HTTPURLResponse)?.statusCode, 404)
        XCTAssertEqual(error.userInfo[FailingURLResponseDataErrorKey] as? Data, Data("{\"status\":404}".utf8))
        XCTAssertEqual(objectSeen.all, [true], "the JSON of an error response is still decoded")
    }

    func testUnacceptableContentTypeFails() throws {
        let failed = expectation(description: "failure")
        let captured = OutcomeBox()
        manager().GET("/status/200?contentType=text/html&body=x", parameters: nil, success: nil, failure: { _, error in
            captured.set(.failure(error))
            failed.fulfill()
        })
        wait(for: [failed], timeout: 5)
        XCTAssertEqual((captured.value?.error as NSError?)?.code, NSURLErrorCannotDecodeContentData)
    }

    func testSettingsAreCopiedOntoEachOperation() throws {
        let manager = manager()
        let queue = DispatchQueue(label: "manager.queue")
        let group = DispatchGroup()
        manager.completionQueue = queue
        manager.completionGroup = group
        manager.credential = URLCredential(user: "u", password: "p", persistence: .none)
        manager.shouldUseCredentialStorage = false
        manager.operationQueue.isSuspended = true
        let operation = try XCTUnwrap(manager.GET("/echo", parameters: nil, success: nil, failure: nil))
        XCTAssertTrue(operation.completionQueue === queue)
        XCTAssertTrue(operation.completionGroup === group)
        XCTAssertEqual(operation.credential?.user, "u")
        XCTAssertFalse(operation.shouldUseCredentialStorage)
        XCTAssertTrue(operation.responseSerializer === manager.responseSerializer)
        XCTAssertEqual(manager.operationQueue.operationCount, 1)
        manager.credential = nil
        XCTAssertEqual(operation.credential?.user, "u", "later changes do not reach existing operations")
        manager.operationQueue.cancelAllOperations()
        manager.operationQueue.isSuspended = false
        XCTAssertTrue(eventually { manager.operationQueue.operationCount == 0 })
    }

    func testTimeoutFromTheSerializerApplies() {
        let manager = manager()
        manager.requestSerializer.timeoutInterval = 0.3
        let failed = expectation(description: "failure")
        manager.GET("/stall-headers", parameters: nil, success: nil, failure: { _, error in
            XCTAssertEqual((error as? URLError)?.code, .timedOut)
            failed.fulfill()
        })
        wait(for: [failed], timeout: 5)
    }
}
