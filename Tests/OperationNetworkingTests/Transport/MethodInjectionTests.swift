import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The method is written into the request line as it is: one that is not an RFC 9110 token (CR, LF,
/// NUL, a space, nothing at all) fails the operation before any connection, from wherever it came.
final class MethodInjectionTests: ServerTestCase {
    private static let hostile = [
        "GET /admin HTTP/1.1\r\nX-Injected: yes\r\nX-Tail:", "POST\r\nX-Injected: yes", "PUT\nX-Injected: yes",
        "DELETE\rX", "PATCH\u{0}", "GET /admin", "", "GÉT",
    ]

    private func assertInvalidMethod(_ error: Error?, _ method: String, file: StaticString = #filePath, line: UInt = #line) {
        let error = error as NSError?
        XCTAssertEqual(error?.domain, RequestSerializationErrorDomain, method.debugDescription, file: file, line: line)
        XCTAssertEqual(error?.code, RequestSerializationErrorCode.invalidMethod.rawValue, method.debugDescription,
                       file: file, line: line)
    }

    func testAMethodThatIsNotATokenFailsBeforeAnyConnection() throws {
        for method in MethodInjectionTests.hostile {
            var request = request("/echo")
            request.httpMethod = method
            let (operation, outcome) = run(request)
            assertInvalidMethod(outcome.error, method)
            XCTAssertNil(operation.response, method.debugDescription)
        }
        XCTAssertEqual(server.acceptedConnections, 0, "no byte of such a request may reach the server")
        XCTAssertTrue(server.requests.isEmpty, "\(server.requests.map { ($0.method, $0.headers) })")
        // Tokens still go as they are (upper-cased, as the library always sent them), with or without a body.
        for method in ["PATCH", "PROPFIND", "MKCOL", "delete", "OPTIONS"] {
            var request = request("/echo")
            request.httpMethod = method
            if method == "PATCH" { request.httpBody = Data("x".utf8) }
            let outcome = run(request).1
            XCTAssertTrue(outcome.isSuccess, "\(method): \(String(describing: outcome.error))")
            XCTAssertEqual(server.requests.last?.method, method.uppercased())
        }
    }

    /// The manager's per-method hook (AFN 2.6's `HTTPRequestOperationWithHTTPMethod:`) is a way in too.
    func testTheManagersPerMethodHookCannotInjectEither() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        let done = expectation(description: "handlers")
        let box = OutcomeBox()
        let method = "PATCH /admin HTTP/1.1\r\nX-Injected: yes\r\nX-Tail:"
        let operation = try XCTUnwrap(manager.httpRequestOperation(
            withHTTPMethod: method, URLString: "/echo", parameters: ["a": "1"],
            success: { _, object in box.set(.success(SendableAny(object))); done.fulfill() },
            failure: { _, error in box.set(.failure(error)); done.fulfill() }))
        manager.operationQueue.addOperation(operation)
        wait(for: [done], timeout: 10)
        assertInvalidMethod(box.value?.error, method)
        XCTAssertEqual(server.acceptedConnections, 0)
        XCTAssertTrue(server.requests.isEmpty)
    }
}
