import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// The library's own serializers validate a passing response from its raw head, so nothing builds
/// Foundation's `HTTPURLResponse` until someone reads `response` (bench/README's table of measured
/// choices); a serializer subclassed outside the library, and a head that fails, take the documented
/// path through `responseObject(for:data:)` with the response built.
final class RawHeadValidationTests: ServerTestCase {
    func testTheLibrarysSerializersLeaveTheResponseUnbuilt() throws {
        let cases: [(String, HTTPResponseSerializer)] = [
            ("/status/200", HTTPResponseSerializer()),
            ("/status/200", JSONResponseSerializer()),
        ]
        for (path, serializer) in cases {
            let operation = HTTPRequestOperation(request: request(path))
            operation.responseSerializer = serializer
            guard case .success(let object) = run(operation) else {
                return XCTFail("\(type(of: serializer)) failed \(path)")
            }
            XCTAssertNotNil(object.value, "\(type(of: serializer))")
            XCTAssertNil(operation.state.withLock { $0.run.response }, "\(type(of: serializer)) built the response")
            // Built when asked for, from the same head.
            XCTAssertEqual(operation.response?.statusCode, 200)
            XCTAssertEqual(operation.response?.value(forHTTPHeaderField: "Content-Type"), "application/json")
        }
    }

    func testASerializerSubclassedOutsideTheLibraryIsHandedTheResponse() throws {
        let serializer = StatusRecordingSerializer()
        let operation = HTTPRequestOperation(request: request("/status/200"))
        operation.responseSerializer = serializer
        guard case .success(let object) = run(operation) else { return XCTFail("the request failed") }
        XCTAssertEqual(object.value as? String, "status 200")
        XCTAssertEqual(serializer.statuses.value, [200])
    }

    func testAHeadThatFailsValidationGetsTheResponseInItsError() throws {
        let operation = HTTPRequestOperation(request: request("/status/404"))
        guard case .failure(let error) = run(operation) else { return XCTFail("a 404 passed") }
        let response = (error as NSError).userInfo[FailingURLResponseErrorKey] as? HTTPURLResponse
        XCTAssertEqual(response?.statusCode, 404)
    }
}

/// A serializer from outside the library: it records the status of every response it is handed.
private final class StatusRecordingSerializer: HTTPResponseSerializer, @unchecked Sendable {
    let statuses = Protected<[Int]>([])

    override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        let status = (response as? HTTPURLResponse)?.statusCode ?? -1
        statuses.withLock { $0.append(status) }
        return "status \(status)"
    }
}
