import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Deeply nested parameters are a `nestingTooDeep` error at `maximumParameterNestingDepth`, in every
/// encoding and through the manager — never a stack overflow — and the deepest accepted parameters
/// still reach the server byte for byte.
final class NestingDepthTests: ServerTestCase {
    private let limit = HTTPRequestSerializer.maximumParameterNestingDepth
    private let hostile = 100_000
    private let url = "http://example.com/resource"

    func testTheLimitIsDocumentedAs256() {
        XCTAssertEqual(limit, 256)
    }

    func testJSONRefusesParametersNestedAHundredThousandDeep() throws {
        for kind in [NestedParameters.Kind.arrays, .dictionaries] {
            let deep = NestedParameters(depth: hostile, kind: kind)
            assertNestingTooDeep(url: url) {
                try JSONRequestSerializer().request(method: "POST", urlString: url, parameters: deep.value)
            }
        }
    }

    func testPropertyListRefusesParametersNestedAHundredThousandDeep() throws {
        for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
            let serializer = PropertyListRequestSerializer()
            serializer.format = format
            let deep = NestedParameters(depth: hostile, kind: .dictionaries)
            assertNestingTooDeep(url: url) {
                try serializer.request(method: "PUT", urlString: url, parameters: deep.value)
            }
        }
    }

    func testQueryStringRefusesParametersNestedAHundredThousandDeep() throws {
        for kind in [NestedParameters.Kind.arrays, .dictionaries] {
            let deep = NestedParameters(depth: hostile, kind: kind)
            // The JSON serializer puts GET parameters in the query string too.
            for serializer in [HTTPRequestSerializer(), JSONRequestSerializer(), PropertyListRequestSerializer()] {
                assertNestingTooDeep(url: url) {
                    try serializer.request(method: "GET", urlString: url, parameters: ["q": deep.value])
                }
            }
        }
    }

    func testFormAndMultipartBodiesRefuseParametersNestedAHundredThousandDeep() throws {
        let deep = NestedParameters(depth: hostile, kind: .arrays)
        let serializer = HTTPRequestSerializer()
        assertNestingTooDeep(url: url) {
            try serializer.request(method: "POST", urlString: url, parameters: deep.value)
        }
        assertNestingTooDeep(url: url) {
            try serializer.multipartFormRequest(method: "POST", urlString: url, parameters: ["f": deep.value],
                                                constructingBodyWith: nil)
        }
    }

    /// Depth is counted through every kind of container, sets included, and through dictionary keys.
    func testOneLevelBeyondTheLimitIsRefusedInEveryEncoding() throws {
        let serializers: [(HTTPRequestSerializer, String)] = [
            (HTTPRequestSerializer(), "GET"), (HTTPRequestSerializer(), "POST"),
            (JSONRequestSerializer(), "POST"), (PropertyListRequestSerializer(), "POST"),
        ]
        for kind in [NestedParameters.Kind.arrays, .dictionaries, .alternating] {
            let atLimit = NestedParameters(depth: limit, kind: kind)
            let beyond = NestedParameters(depth: limit + 1, kind: kind)
            for (serializer, method) in serializers {
                XCTAssertNoThrow(try serializer.request(method: method, urlString: url, parameters: atLimit.value),
                                 "\(type(of: serializer)) \(method) \(kind)")
                assertNestingTooDeep(url: url) {
                    try serializer.request(method: method, urlString: url, parameters: beyond.value)
                }
            }
            XCTAssertNoThrow(try HTTPRequestSerializer().multipartFormRequest(method: "POST", urlString: url,
                                                                              parameters: atLimit.value, constructingBodyWith: nil))
            assertNestingTooDeep(url: url) {
                try HTTPRequestSerializer().multipartFormRequest(method: "POST", urlString: url, parameters: beyond.value,
                                                                 constructingBodyWith: nil)
            }
        }
        // A set counts as a level: `limit` arrays around a set are one too many.
        let aroundSet = NestedParameters(depth: limit - 1, kind: .arrays, leaf: Set<AnyHashable>(["x"]))
        XCTAssertNoThrow(try HTTPRequestSerializer().request(method: "GET", urlString: url, parameters: aroundSet.value))
        assertNestingTooDeep(url: url) {
            try HTTPRequestSerializer().request(method: "GET", urlString: url, parameters: [aroundSet.value])
        }
        // So does a dictionary key (a key is rendered as text, and that text recurses).
        let keyedBySet = NestedParameters(depth: limit - 1, kind: .arrays,
                                          leaf: [AnyHashable(Set<AnyHashable>(["k"])): 1] as [AnyHashable: Any])
        assertNestingTooDeep(url: url) {
            try HTTPRequestSerializer().request(method: "GET", urlString: url, parameters: keyedBySet.value)
        }
        let keyedByString = NestedParameters(depth: limit - 1, kind: .arrays, leaf: [AnyHashable("k"): 1] as [AnyHashable: Any])
        XCTAssertNoThrow(try HTTPRequestSerializer().request(method: "GET", urlString: url, parameters: keyedByString.value))
    }

    /// The documented reason for 256: Foundation's encoders need about 1.5 KiB of stack per level, so
    /// the deepest accepted parameters fit even a 512 KiB thread, and deeper ones are refused there too.
    func testTheDeepestAcceptedParametersEncodeOnA512KiBThread() throws {
        let atLimit = NestedParameters(depth: limit, kind: .arrays)
        let deep = NestedParameters(depth: hostile, kind: .arrays)
        let results = Recorder<String>()
        let done = expectation(description: "encoded on a small stack")
        let url = self.url
        let thread = Thread {
            let serializers = [HTTPRequestSerializer(), JSONRequestSerializer(), PropertyListRequestSerializer()]
            for serializer in serializers {
                let accepted = (try? serializer.request(method: "POST", urlString: url, parameters: atLimit.value)) != nil
                let refused = ((try? serializer.request(method: "POST", urlString: url, parameters: deep.value)) == nil)
                results.append("\(type(of: serializer)) \(accepted) \(refused)")
            }
            done.fulfill()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        wait(for: [done], timeout: 30)
        XCTAssertEqual(results.all, ["HTTPRequestSerializer true true", "JSONRequestSerializer true true",
                                     "PropertyListRequestSerializer true true"])
    }

    // MARK: - Through the manager

    func testManagerReportsDeepJSONAsFailureWithoutAnOperation() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.requestSerializer = JSONRequestSerializer()
        let deep = NestedParameters(depth: hostile, kind: .dictionaries)
        let operation = expectFailureWithoutOperation(manager) { success, failure in
            manager.POST("echo", parameters: deep.value, success: success, failure: failure)
        }
        XCTAssertNil(operation)
        XCTAssertTrue(server.requests.isEmpty, "nothing was sent")
    }

    func testManagerReportsADeepQueryAsFailureWithoutAnOperation() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        let deep = NestedParameters(depth: hostile, kind: .arrays)
        let operation = expectFailureWithoutOperation(manager) { success, failure in
            manager.GET("echo", parameters: ["q": deep.value], success: success, failure: failure)
        }
        XCTAssertNil(operation)
        XCTAssertTrue(server.requests.isEmpty, "nothing was sent")
    }

    /// At the limit every encoding reaches the server intact; one level more fails before sending.
    func testTheDeepestAcceptedParametersReachTheServerIntact() throws {
        let arrays = NestedParameters(depth: limit, kind: .arrays)
        let below = NestedParameters(depth: limit - 1, kind: .arrays)   // under "q", the whole is `limit` deep
        let brackets = String(repeating: "%5B%5D", count: limit - 1)

        let json = try send(JSONRequestSerializer(), "POST", arrays.value)
        XCTAssertEqual(String(decoding: json.body, as: UTF8.self),
                       String(repeating: "[", count: limit) + "\"x\"" + String(repeating: "]", count: limit))
        XCTAssertEqual(json.header("Content-Type"), "application/json")

        let plist = try send(PropertyListRequestSerializer(), "POST", arrays.value)
        XCTAssertEqual(plist.body, try PropertyListSerialization.data(fromPropertyList: arrays.value, format: .xml, options: 0))

        let query = try send(HTTPRequestSerializer(), "GET", ["q": below.value])
        XCTAssertEqual(query.uri, "/echo?q\(brackets)=x")

        let form = try send(HTTPRequestSerializer(), "POST", ["q": below.value])
        XCTAssertEqual(String(decoding: form.body, as: UTF8.self), "q\(brackets)=x")

        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.requestSerializer = JSONRequestSerializer()
        let beyond = NestedParameters(depth: limit + 1, kind: .arrays)
        server.clearLog()
        XCTAssertNil(expectFailureWithoutOperation(manager) { success, failure in
            manager.POST("echo", parameters: beyond.value, success: success, failure: failure)
        })
        XCTAssertTrue(server.requests.isEmpty, "the refused request was not sent")
    }

    // MARK: - Helpers

    /// Sends `parameters` to /echo through a manager with `serializer`; what the server received.
    private func send(_ serializer: HTTPRequestSerializer, _ method: String, _ parameters: Any,
                      file: StaticString = #filePath, line: UInt = #line) throws -> RecordedRequest {
        server.clearLog()
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.requestSerializer = serializer
        manager.responseSerializer = HTTPResponseSerializer()
        let done = expectation(description: "\(method) \(type(of: serializer))")
        let success: HTTPRequestOperationManager.Success = { _, _ in done.fulfill() }
        let failure: HTTPRequestOperationManager.Failure = { _, error in
            XCTFail("\(error)", file: file, line: line)
            done.fulfill()
        }
        if method == "GET" {
            XCTAssertNotNil(manager.GET("echo", parameters: parameters, success: success, failure: failure), file: file, line: line)
        } else {
            XCTAssertNotNil(manager.POST("echo", parameters: parameters, success: success, failure: failure), file: file, line: line)
        }
        wait(for: [done], timeout: 10)
        return try XCTUnwrap(server.requests.first, file: file, line: line)
    }

    /// Calls `start` with handlers, on a manager whose completion queue is marked; checks that only
    /// `failure(nil, nestingTooDeep)` runs, on that queue. What `start` returned.
    private func expectFailureWithoutOperation(
        _ manager: HTTPRequestOperationManager, file: StaticString = #filePath, line: UInt = #line,
        _ start: (@escaping HTTPRequestOperationManager.Success, @escaping HTTPRequestOperationManager.Failure)
            -> HTTPRequestOperation?
    ) -> HTTPRequestOperation? {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "nesting-test-completion")
        queue.setSpecific(key: key, value: "completion")
        manager.completionQueue = queue
        let failed = expectation(description: "failure(nil, error)")
        let expectedURL = server.url("/echo")
        let operation = start({ _, _ in XCTFail("success", file: file, line: line) }, { operation, error in
            XCTAssertNil(operation, file: file, line: line)
            XCTAssertEqual(DispatchQueue.getSpecific(key: key), "completion", "on the completion queue", file: file, line: line)
            Self.assertIsNestingTooDeep(error, url: expectedURL.absoluteString, file: file, line: line)
            failed.fulfill()
        })
        wait(for: [failed], timeout: 10)
        return operation
    }

    private func assertNestingTooDeep(url: String, file: StaticString = #filePath, line: UInt = #line,
                                      _ body: () throws -> URLRequest) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            Self.assertIsNestingTooDeep(error, url: url, file: file, line: line)
        }
    }

    private static func assertIsNestingTooDeep(_ error: Error, url: String, file: StaticString, line: UInt) {
        let error = error as NSError
        XCTAssertEqual(error.domain, RequestSerializationErrorDomain, file: file, line: line)
        XCTAssertEqual(error.code, RequestSerializationErrorCode.nestingTooDeep.rawValue, "\(error)", file: file, line: line)
        XCTAssertTrue(error.localizedDescription.contains("256"), error.localizedDescription, file: file, line: line)
        XCTAssertEqual((error.userInfo[NSURLErrorFailingURLErrorKey] as? URL)?.absoluteString, url, file: file, line: line)
    }
}

/// Parameters nested `depth` containers deep around `leaf`, built and released without recursion:
/// Swift frees a nested array by recursing into it, which overflows the stack at these depths as
/// surely as an encoder would, so every level is held here and released outermost first.
final class NestedParameters: @unchecked Sendable {   // immutable after init; only read
    enum Kind {
        /// `[[[leaf]]]`
        case arrays
        /// `["a": ["a": ["a": leaf]]]`
        case dictionaries
        /// `["a": [["a": leaf]]]`
        case alternating
    }

    /// The outermost container.
    private(set) var value: Any
    /// Every level, innermost first.
    private var levels: [Any] = []

    init(depth: Int, kind: Kind, leaf: Any = "x") {
        var current = leaf
        levels.reserveCapacity(depth)
        for level in 0..<depth {
            switch kind {
            case .arrays: current = [current]
            case .dictionaries: current = ["a": current]
            case .alternating:
                if level % 2 == 0 { current = ["a": current] } else { current = [current] }
            }
            levels.append(current)
        }
        value = current
    }

    deinit {
        value = 0
        // Outermost first: each level then frees its container alone, its content still held here.
        while levels.popLast() != nil {}
    }
}
