import Dispatch
import Foundation

/// Creates `HTTPRequestOperation`s from URL strings relative to a base URL and enqueues them on its
/// `operationQueue` (AFNetworking's `AFHTTPRequestOperationManager`, API.md §4).
///
/// Settings are copied onto each operation when it is created; changing the manager later does not
/// affect operations already made. The queue's `maxConcurrentOperationCount` limits how many requests
/// run at once, and suspending it holds back the rest.
/// - Threading: settings are guarded by an internal lock; the convenience methods may be called from
///   any thread.
open class HTTPRequestOperationManager: NSObject, NSSecureCoding, NSCopying, @unchecked Sendable {
    /// Success of a convenience method.
    public typealias Success = @Sendable (HTTPRequestOperation, Any?) -> Void
    /// Failure of a convenience method; the operation is `nil` only when the request could not be built.
    public typealias Failure = @Sendable (HTTPRequestOperation?, Error) -> Void

    /// Relative URL strings resolve against it (`URL(string:relativeTo:)`). A base URL with a path gets
    /// a trailing `/` (AFN rule), so `http://h/v1` + `users` is `http://h/v1/users`.
    public let baseURL: URL?

    /// Guards every stored `var` below.
    private let lock = NSLock()
    private var storedRequestSerializer = HTTPRequestSerializer()                 // guarded by lock
    private var storedResponseSerializer: HTTPResponseSerializer = JSONResponseSerializer()   // guarded by lock
    private var storedQueue = OperationQueue()                                    // guarded by lock
    private var storedShouldUseCredentialStorage = true                           // guarded by lock
    private var storedCredential: URLCredential?                                  // guarded by lock
    private var storedSecurityPolicy = SecurityPolicy.default()                   // guarded by lock
    private var storedClientCertificate: ClientCertificate?                       // guarded by lock
    private var storedReachability = NetworkReachabilityManager.shared            // guarded by lock
    private var storedCompletionQueue: DispatchQueue?                             // guarded by lock
    private var storedCompletionGroup: DispatchGroup?                             // guarded by lock

    /// A manager for `baseURL` (nil: every URL string must be absolute).
    public required init(baseURL: URL?) {
        if let url = baseURL, !url.path.isEmpty, !url.absoluteString.hasSuffix("/") {
            self.baseURL = url.appendingPathComponent("")
        } else {
            self.baseURL = baseURL
        }
        super.init()
        storedQueue.name = "org.operationnetworking.manager"
    }

    /// Restores an archived manager (see `encode(with:)`): a new, empty queue and default
    /// completion queue. A required key of the wrong type falls back to the default.
    public required convenience init?(coder: NSCoder) {
        self.init(baseURL: HTTPRequestOperationManager.decodeBaseURL(from: coder))
        decodeSettings(from: coder)
    }

    /// A manager without a base URL.
    public convenience override init() {
        self.init(baseURL: nil)
    }

    /// A new manager without a base URL (AFN's `+manager`).
    public static func manager() -> Self {
        self.init(baseURL: nil)
    }

    /// Builds every request. Default `HTTPRequestSerializer()`.
    public var requestSerializer: HTTPRequestSerializer {
        get { lock.withLock { storedRequestSerializer } }
        set { lock.withLock { storedRequestSerializer = newValue } }
    }
    /// Given to every operation. Default `JSONResponseSerializer()` (unlike a bare operation).
    public var responseSerializer: HTTPResponseSerializer {
        get { lock.withLock { storedResponseSerializer } }
        set { lock.withLock { storedResponseSerializer = newValue } }
    }
    /// The queue the convenience methods enqueue on. Default: a new queue, no concurrency limit.
    public var operationQueue: OperationQueue {
        get { lock.withLock { storedQueue } }
        set { lock.withLock { storedQueue = newValue } }
    }
    /// Copied onto each operation. Default `true`.
    public var shouldUseCredentialStorage: Bool {
        get { lock.withLock { storedShouldUseCredentialStorage } }
        set { lock.withLock { storedShouldUseCredentialStorage = newValue } }
    }
    /// Copied onto each operation. Default `nil`.
    public var credential: URLCredential? {
        get { lock.withLock { storedCredential } }
        set { lock.withLock { storedCredential = newValue } }
    }
    /// Given to each operation (the same instance, as AFN). Default `SecurityPolicy.default()`.
    public var securityPolicy: SecurityPolicy {
        get { lock.withLock { storedSecurityPolicy } }
        set { lock.withLock { storedSecurityPolicy = newValue } }
    }
    /// Watches the network, for pausing the queue while it is gone. Default `.shared`; the manager never
    /// starts it: call `startMonitoring()` (AFN).
    public var reachabilityManager: NetworkReachabilityManager {
        get { lock.withLock { storedReachability } }
        set { lock.withLock { storedReachability = newValue } }
    }
    /// Copied onto each operation: offered to servers that ask for a client certificate. Default `nil`.
    public var clientCertificate: ClientCertificate? {
        get { lock.withLock { storedClientCertificate } }
        set { lock.withLock { storedClientCertificate = newValue } }
    }
    /// Copied onto each operation; also where request-building failures are reported. Default `nil`:
    /// the library's serial callback queue.
    public var completionQueue: DispatchQueue? {
        get { lock.withLock { storedCompletionQueue } }
        set { lock.withLock { storedCompletionQueue = newValue } }
    }
    /// Copied onto each operation. Default `nil`.
    public var completionGroup: DispatchGroup? {
        get { lock.withLock { storedCompletionGroup } }
        set { lock.withLock { storedCompletionGroup = newValue } }
    }

    /// Builds and configures an operation for `request` without enqueueing it (the override point).
    open func httpRequestOperation(with request: URLRequest, success: Success?,
                                   failure: (@Sendable (HTTPRequestOperation, Error) -> Void)?) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request)
        let settings = lock.withLock {
            (storedResponseSerializer, storedShouldUseCredentialStorage, storedCredential,
             storedCompletionQueue, storedCompletionGroup, storedSecurityPolicy, storedClientCertificate)
        }
        operation.securityPolicy = settings.5
        operation.clientCertificate = settings.6
        operation.responseSerializer = settings.0
        operation.shouldUseCredentialStorage = settings.1
        operation.credential = settings.2
        operation.setCompletionBlockWithSuccess(success, failure: failure)
        operation.completionQueue = settings.3
        operation.completionGroup = settings.4
        return operation
    }

    /// `GET` with `parameters` in the query string; enqueued. `nil` (and `failure(nil, error)` on the
    /// completion queue) when the request cannot be built.
    @discardableResult
    public func GET(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue("GET", URLString, parameters, success, failure)
    }

    /// `HEAD`; the success block gets only the operation.
    @discardableResult
    public func HEAD(_ URLString: String, parameters: Any?, success: (@Sendable (HTTPRequestOperation) -> Void)?,
                     failure: Failure?) -> HTTPRequestOperation? {
        var adapted: Success?
        if let success {
            adapted = { operation, _ in success(operation) }
        }
        return enqueue("HEAD", URLString, parameters, adapted, failure)
    }

    /// `POST` with `parameters` in the body (url-encoded by default).
    @discardableResult
    public func POST(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue("POST", URLString, parameters, success, failure)
    }

    /// A multipart form `POST`: `parameters` as fields, then the parts `block` appends; the body is
    /// streamed. `nil` (and `failure(nil, error)`) when the request cannot be built, including an error
    /// thrown by `block` (a file that cannot be appended).
    @discardableResult
    public func POST(_ URLString: String, parameters: [String: Any]?,
                     constructingBodyWith block: ((MultipartFormData) throws -> Void)?,
                     success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue(URLString, success, failure) { serializer, url in
            try serializer.multipartFormRequest(method: "POST", urlString: url, parameters: parameters,
                                                constructingBodyWith: block)
        }
    }

    /// `PUT` with `parameters` in the body.
    @discardableResult
    public func PUT(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue("PUT", URLString, parameters, success, failure)
    }

    /// `PATCH` with `parameters` in the body.
    @discardableResult
    public func PATCH(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue("PATCH", URLString, parameters, success, failure)
    }

    /// `DELETE` with `parameters` in the query string.
    @discardableResult
    public func DELETE(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue("DELETE", URLString, parameters, success, failure)
    }

    /// The absolute URL string for `URLString` relative to `baseURL`, or `nil` when it does not parse.
    func resolve(_ URLString: String) -> String? {
        URL(string: URLString, relativeTo: baseURL)?.absoluteString
    }

    private func enqueue(_ method: String, _ URLString: String, _ parameters: Any?, _ success: Success?,
                         _ failure: Failure?) -> HTTPRequestOperation? {
        enqueue(URLString, success, failure) { serializer, url in
            try serializer.request(method: method, urlString: url, parameters: parameters)
        }
    }

    private func enqueue(_ URLString: String, _ success: Success?, _ failure: Failure?,
                         build: (HTTPRequestSerializer, String) throws -> URLRequest) -> HTTPRequestOperation? {
        let request: URLRequest
        do {
            guard let resolved = resolve(URLString) else {
                throw NSError(domain: RequestSerializationErrorDomain, code: NSURLErrorBadURL, userInfo: [
                    NSLocalizedDescriptionKey: "\"\(URLString)\" is not a valid URL."])
            }
            request = try build(requestSerializer, resolved)
        } catch {
            let queue = completionQueue ?? CallbackQueues.callback
            queue.async(group: completionGroup) { failure?(nil, error) }
            return nil
        }
        var operationFailure: (@Sendable (HTTPRequestOperation, Error) -> Void)?
        if let failure {
            operationFailure = { operation, error in failure(operation, error) }
        }
        let operation = httpRequestOperation(with: request, success: success, failure: operationFailure)
        operationQueue.addOperation(operation)
        return operation
    }
}
