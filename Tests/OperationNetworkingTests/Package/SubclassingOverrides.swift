// Deliberately a plain import (no @testable, which would open every public class and member): these
// subclasses compile only while each member the DocC article Subclassing lists is `open` and spelled
// exactly as its table says. SubclassingTableTests holds the table against these overrides and
// against the library's `open` declarations, so a changed signature breaks this build and a new or
// removed override point fails that test.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

final class ManagerOverrides: HTTPRequestOperationManager, @unchecked Sendable {   // no state of its own
    /// An initializer of its own: `required init(baseURL:)` must then be written too.
    convenience init(host: String) {
        self.init(baseURL: URL(string: "https://\(host)/"))
    }

    required init(baseURL: URL?) {
        super.init(baseURL: baseURL)
    }

    override class func manager() -> Self {
        super.manager()
    }

    override func httpRequestOperation(with request: URLRequest, success: Success?, failure: (@Sendable (HTTPRequestOperation, Error) -> Void)?) -> HTTPRequestOperation {
        super.httpRequestOperation(with: request, success: success, failure: failure)
    }

    override func httpRequestOperation(withHTTPMethod method: String, URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        super.httpRequestOperation(withHTTPMethod: method, URLString: URLString, parameters: parameters, success: success, failure: failure)
    }

    override func GET(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        super.GET(URLString, parameters: parameters, success: success, failure: failure)
    }

    override func HEAD(_ URLString: String, parameters: Any?, success: (@Sendable (HTTPRequestOperation) -> Void)?, failure: Failure?) -> HTTPRequestOperation? {
        super.HEAD(URLString, parameters: parameters, success: success, failure: failure)
    }

    override func POST(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        super.POST(URLString, parameters: parameters, success: success, failure: failure)
    }

    override func POST(_ URLString: String, parameters: Any?, constructingBodyWith block: ((MultipartFormData) throws -> Void)?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        super.POST(URLString, parameters: parameters, constructingBodyWith: block, success: success, failure: failure)
    }

    override func PUT(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        super.PUT(URLString, parameters: parameters, success: success, failure: failure)
    }

    override func PATCH(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        super.PATCH(URLString, parameters: parameters, success: success, failure: failure)
    }

    override func DELETE(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        super.DELETE(URLString, parameters: parameters, success: success, failure: failure)
    }
}

final class ConnectionOperationOverrides: URLConnectionOperation, @unchecked Sendable {   // tag is immutable
    let tag: String

    /// An initializer of its own: without `required init(request:)` below, the compiler's first error
    /// is that `init(coder:)` must be provided.
    init(request: URLRequest, tag: String) {
        self.tag = tag
        super.init(request: request)
    }

    required init(request: URLRequest) {
        tag = ""
        super.init(request: request)
    }

    override var error: Error? { super.error }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }

    override func restore(from coder: NSCoder) {
        super.restore(from: coder)
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override var response: URLResponse? { super.response }

    override func operationDidReceiveResponse(_ response: HTTPURLResponse) -> ResponseDisposition {
        super.operationDidReceiveResponse(response)
    }

    override var isAsynchronous: Bool { super.isAsynchronous }

    override var isExecuting: Bool { super.isExecuting }

    override var isFinished: Bool { super.isFinished }

    override var isCancelled: Bool { super.isCancelled }

    override var isReady: Bool { super.isReady }

    override var completionBlock: (@Sendable () -> Void)? {
        get { super.completionBlock }
        set { super.completionBlock = newValue }
    }

    override func start() {
        super.start()
    }

    override func cancel() {
        super.cancel()
    }

    override func waitUntilFinished() {
        super.waitUntilFinished()
    }
}

final class RequestOperationOverrides: HTTPRequestOperation, @unchecked Sendable {   // no state of its own
    override var response: HTTPURLResponse? { super.response }

    override var error: Error? { super.error }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }

    override func restore(from coder: NSCoder) {
        super.restore(from: coder)
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }
}

final class PolicyOverrides: SecurityPolicy, @unchecked Sendable {   // no state of its own
    override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool {
        super.evaluateServerTrust(chain, forDomain: domain)
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }

    override func isEqual(_ object: Any?) -> Bool {
        super.isEqual(object)
    }

    override var hash: Int { super.hash }
}

final class RequestSerializerOverrides: HTTPRequestSerializer, @unchecked Sendable {   // no state of its own
    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }

    override func request(method: String, urlString: String, parameters: Any?) throws -> URLRequest {
        try super.request(method: method, urlString: urlString, parameters: parameters)
    }

    override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        try super.request(bySerializing: request, withParameters: parameters)
    }
}

final class JSONRequestSerializerOverrides: JSONRequestSerializer, @unchecked Sendable {   // no state of its own
    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        try super.request(bySerializing: request, withParameters: parameters)
    }
}

final class PropertyListRequestSerializerOverrides: PropertyListRequestSerializer, @unchecked Sendable {   // no state of its own
    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        try super.request(bySerializing: request, withParameters: parameters)
    }
}

final class ResponseSerializerOverrides: HTTPResponseSerializer, @unchecked Sendable {   // level is immutable
    let level: Int

    /// A designated initializer of its own: both required ones must then be written.
    init(level: Int) {
        self.level = level
        super.init()
    }

    required init() {
        level = 0
        super.init()
    }

    required init?(coder: NSCoder) {
        level = 0
        super.init(coder: coder)
    }

    override func validate(_ response: HTTPURLResponse?, data: Data?) throws {
        try super.validate(response, data: data)
    }

    override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try super.responseObject(for: response, data: data)
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }
}

final class JSONResponseSerializerOverrides: JSONResponseSerializer, @unchecked Sendable {   // no state of its own
    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }
}

final class PropertyListResponseSerializerOverrides: PropertyListResponseSerializer, @unchecked Sendable {   // no state
    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }
}

final class XMLDocumentResponseSerializerOverrides: XMLDocumentResponseSerializer, @unchecked Sendable {   // no state
    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }
}

final class CompoundResponseSerializerOverrides: CompoundResponseSerializer, @unchecked Sendable {   // no state
    override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try super.responseObject(for: response, data: data)
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        super.copy(with: zone)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
    }
}

/// No open member of its own: what it inherits from HTTPResponseSerializer is overridden as there.
final class XMLParserResponseSerializerOverrides: XMLParserResponseSerializer, @unchecked Sendable {}   // no state

/// No open member of its own, as above.
final class ImageResponseSerializerOverrides: ImageResponseSerializer, @unchecked Sendable {}   // no state

/// No open member, and no initializer a subclass can call: its designated initializer is internal.
final class ReachabilityOverrides: NetworkReachabilityManager, @unchecked Sendable {}   // no state

// The DocC article Subclassing's example, verbatim (SubclassingTableTests compares the two).
final class TaggedRequestOperation: HTTPRequestOperation, @unchecked Sendable {   // tag is immutable
    let tag: String

    init(request: URLRequest, tag: String) {
        self.tag = tag
        super.init(request: request)
    }

    // copy() and archives make operations through it.
    required init(request: URLRequest) {
        tag = ""
        super.init(request: request)
    }
}
