import Dispatch
import Foundation

/// Creates `HTTPRequestOperation`s from URL strings relative to a base URL and enqueues them on its
/// `operationQueue` (AFNetworking's `AFHTTPRequestOperationManager`).
///
/// Subclassing (as AFN apps do): override `manager()`, `init(baseURL:)`, the convenience methods, the
/// per-method hook `httpRequestOperation(withHTTPMethod:URLString:parameters:success:failure:)` (to
/// sign or change every request) or `httpRequestOperation(with:success:failure:)` (to configure every
/// operation). A subclass that overrides `required init(baseURL:)` (its only designated initializer)
/// inherits `init()`, `init?(coder:)` and `manager()`, which all go through it: copies, archives and
/// `manager()` are configured by the subclass.
///
/// Settings are copied onto each operation when it is created; changing the manager later does not
/// affect operations already made. The queue's `maxConcurrentOperationCount` limits how many requests
/// run at once, and suspending it holds back the rest.
/// The methods that take blocks are `@preconcurrency`: blocks ported from AFN that capture state which
/// is not `Sendable` compile in the Swift 6 language mode with warnings rather than errors, so a port
/// builds first and is made safe warning by warning (Migration.md, "Porting to Swift 6"). The block
/// types stay `@Sendable`: the blocks run on the completion queue, not where they were set.
/// - Threading: the settings are owned by one `Protected` value (`state`); the convenience methods may
///   be called from any thread.
open class HTTPRequestOperationManager: NSObject, NSSecureCoding, NSCopying, @unchecked Sendable {
    /// Success of a convenience method.
    public typealias Success = @Sendable (HTTPRequestOperation, Any?) -> Void
    /// Failure of a convenience method; the operation is `nil` only when the request could not be built.
    public typealias Failure = @Sendable (HTTPRequestOperation?, Error) -> Void

    /// Relative URL strings resolve against it (`URL(string:relativeTo:)`). A base URL with a path gets
    /// a trailing `/` (AFN rule), so `http://h/v1` + `users` is `http://h/v1/users`.
    public let baseURL: URL?

    /// The manager's settings.
    private struct State {
        var requestSerializer: HTTPRequestSerializer
        var responseSerializer: HTTPResponseSerializer
        var queue: OperationQueue
        /// The settings copied whole onto each operation the manager creates.
        var operationConfiguration: OperationConfiguration
        var reachability: NetworkReachabilityManager
        var eventMonitors: [EventMonitor] = []
    }

    private let state: Protected<State>

    /// A manager for `baseURL` (nil: every URL string must be absolute).
    public required init(baseURL: URL?) {
        if let url = baseURL, !url.path.isEmpty, !url.absoluteString.hasSuffix("/") {
            self.baseURL = url.appendingPathComponent("")
        } else {
            self.baseURL = baseURL
        }
        let queue = OperationQueue()
        queue.name = "org.operationnetworking.manager"
        var configuration = OperationConfiguration()
        configuration.securityPolicy = SecurityPolicy.default()
        state = Protected(State(requestSerializer: HTTPRequestSerializer(), responseSerializer: JSONResponseSerializer(),
                                queue: queue, operationConfiguration: configuration,
                                reachability: NetworkReachabilityManager.shared))
        super.init()
    }

    /// Restores an archived manager (see `encode(with:)`): a new, empty queue and default
    /// completion queue. A value of the wrong type fails the decoding (`SafeArchive` throws
    /// `ArchiveErrorCode.invalidValue`) rather than leaving a default in its place.
    public required convenience init?(coder: NSCoder) {
        self.init(baseURL: HTTPRequestOperationManager.decodeBaseURL(from: coder))
        decodeSettings(from: coder)
    }

    /// A manager without a base URL (calls `init(baseURL: nil)`, so a subclass's override of that
    /// initializer runs).
    public required convenience override init() {
        self.init(baseURL: nil)
    }

    /// A new manager without a base URL (AFN's `+manager`), made through `init()` — so a subclass's
    /// initializer (its `init()`, or its `init(baseURL:)` that `init()` calls) configures it. Overridable.
    open class func manager() -> Self {
        self.init()
    }

    /// Builds every request. Default `HTTPRequestSerializer()`.
    public var requestSerializer: HTTPRequestSerializer {
        get { state.withLock { $0.requestSerializer } }
        set { state.withLock { $0.requestSerializer = newValue } }
    }
    /// Given to every operation. Default `JSONResponseSerializer()` (unlike a bare operation).
    public var responseSerializer: HTTPResponseSerializer {
        get { state.withLock { $0.responseSerializer } }
        set { state.withLock { $0.responseSerializer = newValue } }
    }
    /// The queue the convenience methods enqueue on. Default: a new queue, no concurrency limit.
    public var operationQueue: OperationQueue {
        get { state.withLock { $0.queue } }
        set { state.withLock { $0.queue = newValue } }
    }
    /// Copied onto each operation. Default `true`.
    public var shouldUseCredentialStorage: Bool {
        get { self[setting: \.shouldUseCredentialStorage] }
        set { self[setting: \.shouldUseCredentialStorage] = newValue }
    }
    /// Copied onto each operation. Default `nil`.
    public var credential: URLCredential? {
        get { self[setting: \.credential] }
        set { self[setting: \.credential] = newValue }
    }
    /// Given to each operation (the same instance, as AFN). Default `SecurityPolicy.default()`.
    public var securityPolicy: SecurityPolicy {
        get { self[setting: \.securityPolicy] ?? SecurityPolicy.default() }
        set { self[setting: \.securityPolicy] = newValue }
    }
    /// Watches the network, for pausing the queue while it is gone. Default `.shared`; the manager never
    /// starts it: call `startMonitoring()` (AFN).
    public var reachabilityManager: NetworkReachabilityManager {
        get { state.withLock { $0.reachability } }
        set { state.withLock { $0.reachability = newValue } }
    }
    /// Copied onto each operation: offered to servers that ask for a client certificate. Default `nil`.
    public var clientCertificate: ClientCertificate? {
        get { self[setting: \.clientCertificate] }
        set { self[setting: \.clientCertificate] = newValue }
    }
    /// Copied onto each operation: the most response-body bytes it accepts (see
    /// `URLConnectionOperation.maximumResponseSize`). Default `nil`, no limit. Not archived.
    public var maximumResponseSize: Int64? {
        get { self[setting: \.maximumResponseSize] }
        set { self[setting: \.maximumResponseSize] = newValue }
    }
    /// Copied onto each operation: when it sends its request again (see `RetryPolicy`). Default `.none`.
    /// Archived with the manager.
    public var retryPolicy: RetryPolicy {
        get { self[setting: \.retryPolicy] }
        set { self[setting: \.retryPolicy] = newValue }
    }
    /// Copied onto each operation: adapts each attempt's request and decides about retries beyond
    /// `retryPolicy` (see `RequestInterceptor`). Default `nil`. Not archived (it is code); `copy()` keeps it.
    public var interceptor: RequestInterceptor? {
        get { self[setting: \.interceptor] }
        set { self[setting: \.interceptor] = newValue }
    }
    /// Copied onto each operation: the URL cache its responses are read from and stored in, as each
    /// request's `cachePolicy` says (see `URLConnectionOperation.urlCache`). Default `URLCache.shared`,
    /// as it is when each operation starts; `nil` turns caching off. The archive records only whether
    /// it is `nil`.
    public var urlCache: URLCache? {
        get { self[setting: \.urlCache].cache }
        set { self[setting: \.urlCache] = CacheSetting(newValue) }
    }
    /// Copied onto each operation; also where request-building failures are reported. Default `nil`:
    /// the library's serial callback queue.
    public var completionQueue: DispatchQueue? {
        get { self[setting: \.completionQueue] }
        set { self[setting: \.completionQueue] = newValue }
    }
    /// Copied onto each operation. Default `nil`.
    public var completionGroup: DispatchGroup? {
        get { self[setting: \.completionGroup] }
        set { self[setting: \.completionGroup] = newValue }
    }

    /// Copied onto each operation: the proxy its requests go through (see `ProxySetting`). Default
    /// `.environment`. Archived with the manager (a user and password in the proxy's URL are not).
    public var proxy: ProxySetting {
        get { self[setting: \.proxy] }
        set { self[setting: \.proxy] = newValue }
    }
    /// Copied onto each operation: the credential for the proxy, sent when an HTTP proxy asks (407) and
    /// up front to a SOCKS5 proxy (see `URLConnectionOperation.proxyCredential`). Default `nil`.
    /// Not archived (the library writes no secret).
    public var proxyCredential: URLCredential? {
        get { self[setting: \.proxyCredential] }
        set { self[setting: \.proxyCredential] = newValue }
    }

    /// Copied onto each operation: the Unix domain socket its requests go over instead of TCP (see
    /// `URLConnectionOperation.unixSocketPath`). Default `nil`. Archived with the manager.
    public var unixSocketPath: String? {
        get { self[setting: \.unixSocketPath] }
        set { self[setting: \.unixSocketPath] = newValue }
    }

    /// Copied onto each operation it creates (see `EventMonitor`). Default: empty. Not archived;
    /// `copy()` keeps it.
    public var eventMonitors: [EventMonitor] {
        get { state.withLock { $0.eventMonitors } }
        set { state.withLock { $0.eventMonitors = newValue } }
    }

    /// One setting of the operations' configuration, under the lock.
    private subscript<Value>(setting key: WritableKeyPath<OperationConfiguration.Settings, Value>) -> Value {
        get { state.withLock { $0.operationConfiguration[dynamicMember: key] } }
        set { state.withLock { $0.operationConfiguration[dynamicMember: key] = newValue } }
    }

    /// The settings copied onto each operation (for `copy()`).
    var operationConfiguration: OperationConfiguration {
        get { state.withLock { $0.operationConfiguration } }
        set { state.withLock { $0.operationConfiguration = newValue } }
    }

    /// Builds and configures an operation for `request` without enqueueing it (the override point).
    @preconcurrency
    open func httpRequestOperation(with request: URLRequest, success: Success?,
                                   failure: (@Sendable (HTTPRequestOperation, Error) -> Void)?) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request)
        let (configuration, serializer, monitors) = state.withLock {
            ($0.operationConfiguration, $0.responseSerializer, $0.eventMonitors)
        }
        operation.apply(configuration)
        operation.eventMonitors = monitors
        operation.responseSerializer = serializer
        operation.setCompletionBlockWithSuccess(success, failure: failure)
        return operation
    }

    /// AFN 2.6's per-method hook, through which `GET`, `HEAD`, `POST`, `PUT`, `PATCH` and `DELETE` build
    /// their operation: serializes the request with `requestSerializer` (relative to `baseURL`), builds
    /// the operation with `httpRequestOperation(with:success:failure:)`, and does not enqueue it.
    /// Override it to see or change every call (apps sign requests here). When the request cannot be
    /// built it returns `nil` and calls `failure(nil, error)` asynchronously on the completion queue.
    @preconcurrency
    open func httpRequestOperation(withHTTPMethod method: String, URLString: String, parameters: Any?,
                                   success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        build(URLString, success, failure) { serializer, url in
            try serializer.request(method: method, urlString: url, parameters: parameters)
        }
    }

    /// `GET` with `parameters` in the query string; enqueued. `nil` (and `failure(nil, error)` on the
    /// completion queue) when the request cannot be built.
    @discardableResult
    @preconcurrency
    open func GET(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue(httpRequestOperation(withHTTPMethod: "GET", URLString: URLString, parameters: parameters,
                                     success: success, failure: failure))
    }

    /// `HEAD`; the success block gets only the operation.
    @discardableResult
    @preconcurrency
    open func HEAD(_ URLString: String, parameters: Any?, success: (@Sendable (HTTPRequestOperation) -> Void)?,
                   failure: Failure?) -> HTTPRequestOperation? {
        var adapted: Success?
        if let success {
            adapted = { operation, _ in success(operation) }
        }
        return enqueue(httpRequestOperation(withHTTPMethod: "HEAD", URLString: URLString, parameters: parameters,
                                            success: adapted, failure: failure))
    }

    /// `POST` with `parameters` in the body (url-encoded by default).
    @discardableResult
    @preconcurrency
    open func POST(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue(httpRequestOperation(withHTTPMethod: "POST", URLString: URLString, parameters: parameters,
                                     success: success, failure: failure))
    }

    /// A multipart form `POST`: `parameters` as fields, then the parts `block` appends; the body is
    /// streamed. Built with `httpRequestOperation(with:success:failure:)` (AFN: not through the
    /// per-method hook). `nil` (and `failure(nil, error)`) when the request cannot be built, including
    /// an error thrown by `block` (a file that cannot be appended).
    @discardableResult
    @preconcurrency
    open func POST(_ URLString: String, parameters: Any?,
                   constructingBodyWith block: ((MultipartFormData) throws -> Void)?,
                   success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue(build(URLString, success, failure) { serializer, url in
            try serializer.multipartFormRequest(method: "POST", urlString: url, parameters: parameters,
                                                constructingBodyWith: block)
        })
    }

    /// `PUT` with `parameters` in the body.
    @discardableResult
    @preconcurrency
    open func PUT(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue(httpRequestOperation(withHTTPMethod: "PUT", URLString: URLString, parameters: parameters,
                                     success: success, failure: failure))
    }

    /// `PATCH` with `parameters` in the body.
    @discardableResult
    @preconcurrency
    open func PATCH(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue(httpRequestOperation(withHTTPMethod: "PATCH", URLString: URLString, parameters: parameters,
                                     success: success, failure: failure))
    }

    /// `DELETE` with `parameters` in the query string.
    @discardableResult
    @preconcurrency
    open func DELETE(_ URLString: String, parameters: Any?, success: Success?, failure: Failure?) -> HTTPRequestOperation? {
        enqueue(httpRequestOperation(withHTTPMethod: "DELETE", URLString: URLString, parameters: parameters,
                                     success: success, failure: failure))
    }

    /// The absolute URL string for `URLString` relative to `baseURL`, or `nil` when it does not parse.
    func resolve(_ URLString: String) -> String? {
        URL(string: URLString, relativeTo: baseURL)?.absoluteString
    }

    /// Adds `operation` (when there is one) to the queue, with the task's current `ServiceContext`, and returns it.
    private func enqueue(_ operation: HTTPRequestOperation?) -> HTTPRequestOperation? {
        guard let operation else { return nil }
        operation.adoptCurrentServiceContext(replacing: true)
        operationQueue.addOperation(operation)
        return operation
    }

    /// Builds the request with `build` and the operation for it; on failure reports `failure(nil, error)`
    /// asynchronously on the completion queue and returns `nil`.
    private func build(_ URLString: String, _ success: Success?, _ failure: Failure?,
                       request build: (HTTPRequestSerializer, String) throws -> URLRequest) -> HTTPRequestOperation? {
        let request: URLRequest
        do {
            guard let resolved = resolve(URLString) else { throw LibraryError.badURL(URLString) }
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
        return httpRequestOperation(with: request, success: success, failure: operationFailure)
    }
}
