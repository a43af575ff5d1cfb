import Dispatch
import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif
import Tracing

extension Notification.Name {
    /// Posted (object: the operation, no `userInfo`) when an operation starts, before its request is
    /// handed to the network thread, and again on every resume. Posted asynchronously from the
    /// library's callback queue, ahead of the finish.
    public static let operationDidStart = Notification.Name("OperationNetworkingOperationDidStartNotification")
    /// Posted (object: the operation) when an operation finishes, and when an executing operation is
    /// paused. Posted asynchronously from the library's callback queue.
    public static let operationDidFinish = Notification.Name("OperationNetworkingOperationDidFinishNotification")
}

/// An asynchronous `Operation` that runs one HTTP request on the shared network thread: the transport
/// half of AFNetworking's `AFURLConnectionOperation`.
///
/// The operation turns *executing* when it hands its request to the network thread and *finished*
/// when the transfer ended, failed or was cancelled and every completion handler returned.
/// It can be paused and resumed; a resumed download continues with a `Range` request.
///
/// - Threading: every property and method may be used from any thread. Mutable state lives in one
///   `Protected` value (`state`); KVO-style notifications, user blocks and network-thread commands are
///   issued after its lock is released. Progress blocks run on `completionQueue` (or the library's
///   callback queue), coalesced; the redirect block runs on the network thread.
/// - Warning: waiting for an operation (`waitUntilFinished()`) from inside a completion queue of your
///   own that the operation also uses deadlocks; on the library's callback queue the wait works (the
///   callbacks queued there run inside it).
open class URLConnectionOperation: Operation, NSSecureCoding, NSCopying, @unchecked Sendable {
    /// A redirect decision: return the request to follow (possibly changed) or `nil` to stop.
    public typealias RedirectResponseBlock = @Sendable (URLConnectionOperation, URLRequest, URLResponse?) -> URLRequest?
    /// Upload progress: `(bytesWritten, totalBytesWritten, totalBytesExpectedToWrite)`, -1 when unknown.
    public typealias UploadProgressBlock = @Sendable (Int, Int64, Int64) -> Void
    /// Download progress: `(bytesRead, totalBytesRead, totalBytesExpectedToRead)`, -1 when unknown.
    public typealias DownloadProgressBlock = @Sendable (Int, Int64, Int64) -> Void
    /// How to answer an authentication challenge (Foundation's dispositions).
    public typealias AuthChallengeDisposition = URLSession.AuthChallengeDisposition
    /// Decides what goes into `urlCache`: return the response to store (possibly changed) or `nil`.
    public typealias CacheResponseBlock = @Sendable (URLConnectionOperation, CachedURLResponse) -> CachedURLResponse?
    /// Answers a 401/407 challenge: a disposition and, for `.useCredential`, the credential.
    public typealias AuthenticationChallengeBlock =
        @Sendable (URLConnectionOperation, URLAuthenticationChallenge) -> (AuthChallengeDisposition, URLCredential?)

    /// Every mutable field of the operation, its life and its configuration.
    let state: Protected<State>

    /// Creates an operation for `request` (designated initializer). Nothing is sent until `start()`.
    /// Its `serviceContext` is the task's current one, if any.
    public required init(request: URLRequest) {
        state = Protected(State(request: request, serviceContext: ServiceContext.current))
        super.init()
    }

    // MARK: - Request and response

    /// The request as given (and as changed by `inputStream`); redirects do not change it.
    public var request: URLRequest { state.withLock { $0.request } }
    /// The request of the transfer under way: after a redirect, the redirected one.
    public var currentRequest: URLRequest { state.withLock { $0.currentRequest } }
    /// The last response received (an `HTTPURLResponse` for http and https); `nil` before the first.
    open var response: URLResponse? {
        state.withLock { state in
            if state.run.response == nil, let head = state.run.head { state.run.response = head.makeResponse() }
            return state.run.response
        }
    }
    /// The transport error, or `URLError(.cancelled)` after `cancel()`; `nil` while none occurred.
    open var error: Error? { transportError }
    /// The last response head, as received (no `HTTPURLResponse` built).
    final var responseHead: ResponseHead? { state.withLock { $0.run.head } }
    /// The transport (or cancel) error alone, whatever a subclass adds to `error`; completed with the
    /// failing URL and a description where the transport left them out.
    final var transportError: Error? {
        let failure = state.withLock { state in state.run.error.map { (error: $0, url: state.currentRequest.url) } }
        return failure.map { TransportError.completed($0.error, url: $0.url) }
    }
    /// The body received, when no custom `outputStream` was set; `nil` after a transport failure
    /// or cancel (as AFNetworking) and until the transfer ended.
    public var responseData: Data? { state.withLock { $0.run.responseData } }
    /// Timing and connection facts, once the transfer ended.
    public var metrics: TransferMetrics? { state.withLock { $0.run.metrics } }

    /// `responseData` decoded with `responseStringEncoding`; `nil` when it does not decode.
    public var responseString: String? {
        guard let data = responseData else { return nil }
        return String(data: data, encoding: responseStringEncoding)
    }

    /// The response's charset when it names an encoding Foundation knows, otherwise UTF-8 (AFN 2.x).
    public var responseStringEncoding: String.Encoding {
        guard let name = response?.textEncodingName else { return .utf8 }
        return StringEncodingNames.encoding(forIANAName: name) ?? .utf8
    }

    // MARK: - Configuration (set before start)

    /// Whether `URLCredentialStorage.shared` is consulted on an authentication challenge. Default `true`.
    public var shouldUseCredentialStorage: Bool {
        get { self[setting: \.shouldUseCredentialStorage] }
        set { self[setting: \.shouldUseCredentialStorage] = newValue }
    }
    /// The credential answering a 401/407 challenge. Default `nil`.
    public var credential: URLCredential? {
        get { self[setting: \.credential] }
        set { self[setting: \.credential] = newValue }
    }
    /// Decides whether the server's certificate chain is trusted, before any request byte is sent.
    /// Default `SecurityPolicy.default()`: system trust, host name validated, no pinning.
    public var securityPolicy: SecurityPolicy {
        get {
            if let policy = self[setting: \.securityPolicy] { return policy }
            let made = SecurityPolicy.default()   // made outside the lock, kept unless another read won
            return state.withLock { state in
                if let policy = state.configuration.securityPolicy { return policy }
                state.configuration.securityPolicy = made
                return made
            }
        }
        set { self[setting: \.securityPolicy] = newValue }
    }
    /// The request body stream: reads and sets `request.httpBodyStream` (clearing `httpBody`).
    public var inputStream: InputStream? {
        get { state.withLock { $0.request.httpBodyStream } }
        set {
            state.withLock { state in
                state.request.httpBodyStream = newValue
                // `currentRequest` is the request again (before the first start it is already).
                if state.run.currentRequest != nil { state.run.currentRequest = nil }
            }
        }
    }
    /// Where the response body goes. Default `nil`: in memory, as `responseData`. Set it before
    /// `start()`; the operation opens it if needed and closes it when it finishes. A stream that stops
    /// accepting bytes fails the operation with the stream's error.
    public var outputStream: OutputStream? {
        get { state.withLock { $0.outputStream } }
        set { state.withLock { $0.outputStream = newValue } }
    }
    /// Where completion handlers and progress blocks run. Default `nil`: the library's shared serial
    /// callback queue (not the main queue: a Linux program rarely runs a main loop).
    public var completionQueue: DispatchQueue? {
        get { self[setting: \.completionQueue] }
        set { self[setting: \.completionQueue] = newValue }
    }
    /// The group completion handlers run in. Default `nil`: a group private to the library.
    public var completionGroup: DispatchGroup? {
        get { self[setting: \.completionGroup] }
        set { self[setting: \.completionGroup] = newValue }
    }
    /// Free for the caller; the library never reads it.
    public var userInfo: [String: Any] {
        get { state.withLock { $0.userInfo } }
        set { state.withLock { $0.userInfo = newValue } }
    }

    /// Sets the block called as the request body goes out (on the completion queue, coalesced:
    /// `bytesWritten` is the count since the previous call). `nil` removes it.
    @preconcurrency
    public func setUploadProgressBlock(_ block: UploadProgressBlock?) {
        self[setting: \.uploadProgressBlock] = block
    }
    /// Sets the block called as the response body arrives (on the completion queue, coalesced:
    /// `bytesRead` is the count since the previous call; totals count a resumed prefix). `nil` removes it.
    @preconcurrency
    public func setDownloadProgressBlock(_ block: DownloadProgressBlock?) {
        self[setting: \.downloadProgressBlock] = block
    }
    /// Sets the block that answers each 401/407 challenge round (on the network thread: keep it short).
    /// `previousFailureCount` counts the rounds already answered. `.performDefaultHandling` uses
    /// `credential` on the first round, then `URLCredentialStorage.shared` when
    /// `shouldUseCredentialStorage`; `.cancelAuthenticationChallenge` delivers the 401/407 and fails
    /// with `URLError(.userCancelledAuthentication)`, the credential never sent;
    /// `.rejectProtectionSpace` delivers the 401/407. Without a block, default handling applies.
    @preconcurrency
    public func setWillSendRequestForAuthenticationChallengeBlock(_ block: AuthenticationChallengeBlock?) {
        self[setting: \.challengeBlock] = block
    }

    /// Sets the block that decides last whether (and what) goes into `urlCache`: it gets the response
    /// and body the cache would store (a response RFC 9111 lets a private cache store, or a stored one
    /// freshened by a `304`) and returns them, changed or not, or `nil` to store nothing. It runs before
    /// the handlers, on the library's processing queue, never on the completion queue; it is not asked
    /// when a stored response answers without the network. `nil` removes it.
    @preconcurrency
    public func setCacheResponseBlock(_ block: CacheResponseBlock?) {
        self[setting: \.cacheBlock] = block
    }

    /// The URL cache the operation reads and stores HTTP responses in, as its request's `cachePolicy`
    /// says: under the default `.useProtocolCachePolicy`, a private cache of RFC 9111 (a fresh stored
    /// response answers without the network, a stale one with a validator is revalidated, a `304`
    /// delivers the stored body with its status). Default `URLCache.shared`, as it is when the operation
    /// starts; `nil` turns caching off for this operation. Only GET requests are read from the cache; a
    /// request with its own `Range` or conditional fields, a body going to `outputStream` and a resumed
    /// download never are, nor stored. Set it before `start()`; `copy()` keeps it.
    ///
    /// When the program has not set `URLCache.shared` to an instance of a `URLCache` subclass, the
    /// library makes it, at first use, a store of its own in one SQLite file (4 MiB memory and 20 MiB
    /// disk capacity, in `$XDG_CACHE_HOME`, else `$HOME/.cache`, under
    /// `org.operationnetworking.URLCache/<process name>`, folders 0700 and files 0600; a folder or file
    /// others could change is refused and the requests go on without a cache): corelibs' own disk
    /// cache can crash on a damaged file and ignores the query in its key. A plain `URLCache` given here
    /// is used as it is. An `https` entry answers only an operation whose `securityPolicy` and
    /// `clientCertificate` are the ones it was fetched under (SECURITY.md, "The HTTP cache").
    public var urlCache: URLCache? {
        get { self[setting: \.urlCache].cache }
        set { self[setting: \.urlCache] = CacheSetting(newValue) }
    }

    /// A client certificate for servers that ask for one (mutual TLS). Default `nil`.
    public var clientCertificate: ClientCertificate? {
        get { self[setting: \.clientCertificate] }
        set { self[setting: \.clientCertificate] = newValue }
    }

    /// The most response-body bytes the operation accepts (after decoding: a compressed body counts
    /// as what it inflates to), or `nil` for no limit (the default, as AFNetworking). More fails the
    /// operation with `URLError(.dataLengthExceedsMaximum)` as soon as it is known: at the head when an
    /// uncompressed `Content-Length` announces more, else when the bytes arrive. Set it before `start()`.
    public var maximumResponseSize: Int64? {
        get { self[setting: \.maximumResponseSize] }
        set { self[setting: \.maximumResponseSize] = newValue.map { max(0, $0) } }
    }

    /// Sets the block that decides each redirect (on the network thread: keep it short). Without one,
    /// redirects are followed (16 hops at most, then `URLError(.httpTooManyRedirects)`).
    @preconcurrency
    public func setRedirectResponseBlock(_ block: RedirectResponseBlock?) {
        self[setting: \.redirectBlock] = block
    }

    /// Called when the response's head arrived, before any byte of its body is written to
    /// `responseData` or `outputStream` (AFN's `connection:didReceiveResponse:`, which
    /// AFDownloadRequestOperation overrode to truncate its file); `response` is already this one.
    /// The default returns what the `setDidReceiveResponseBlock(_:)` block answers, or `.allow`
    /// without one: call `super` first. Return `.restartOutput` after truncating the file behind
    /// `outputStream`, or `.fail(error)` to refuse the response. Runs on the network thread, with no
    /// lock of the operation held; when it is asked is the block's documentation.
    open func operationDidReceiveResponse(_ response: HTTPURLResponse) -> ResponseDisposition {
        self[setting: \.didReceiveResponseBlock].map { $0(self, response) } ?? .allow
    }

    // MARK: - Operation

    /// `true`: the work happens on the network thread.
    open override var isAsynchronous: Bool { true }
    /// Executing from `start()` until every completion handler returned (paused: `false`).
    open override var isExecuting: Bool { state.withLock { $0.lifecycle.isExecuting } }
    /// Finished once the transfer ended and every completion handler returned.
    open override var isFinished: Bool { state.withLock { $0.lifecycle.isFinished } }
    /// Whether `cancel()` took effect: it does until the operation learned that its transfer ended;
    /// a later `cancel()` changes nothing (the response won), so a success handler never sees `true`.
    open override var isCancelled: Bool { state.withLock { $0.lifecycle.isCancelled } }
    /// Dependencies finished, and not parked by a `pause()` before it ever started.
    open override var isReady: Bool {
        let mayStart = state.withLock { $0.lifecycle.mayStart }
        return mayStart && super.isReady
    }
    /// Whether the operation is paused (or a pause is on its way to the network thread).
    public var isPaused: Bool { state.withLock { $0.lifecycle.isPaused } }

    /// Foundation's completion block, run as AFNetworking's override ran it: after the operation
    /// turned finished, on `completionQueue` (default: the library's callback queue, not a global
    /// queue) inside `completionGroup`. It is released once it ran, like every block of the operation.
    open override var completionBlock: (@Sendable () -> Void)? {
        get { state.withLock { $0.completionBlock } }
        set { state.withLock { $0.completionBlock = newValue } }
    }

    /// Hands the request to the network thread (or answers it from `urlCache`); a cancelled operation
    /// finishes without network traffic.
    open override func start() {
        startOrResume { $0.start() }
    }

    /// Cancels: before start, nothing is ever sent; while executing, the transfer stops at the network
    /// thread's next turn and no request of it starts after this returns; while paused (or pausing),
    /// the operation finishes. Failure handlers run with `URLError(.cancelled)`. Once the operation
    /// learned that its transfer ended, a cancel changes nothing.
    open override func cancel() {
        let (took, step) = state.withLock { state -> (Bool, Step?) in
            let before = state.lifecycle.isCancelled
            let step = advance(&state) { $0.cancel() }
            return (!before && state.lifecycle.isCancelled, step)
        }
        guard took else { return }
        super.cancel()   // Foundation's own bookkeeping: a cancelled operation is ready whatever its dependencies
        perform(step)
    }

    /// Stops an executing transfer, keeping the bytes received; the operation keeps its queue slot.
    /// Posts `operationDidFinish`. A `resume()` or `cancel()` right after takes effect once the pause
    /// reached the network thread. Pausing a finished or cancelled operation does nothing.
    public func pause() {
        perform(state.withLock { advance(&$0) { $0.pause() } })
    }

    /// Continues a paused operation, with `Range: bytes=N-` when the server supports ranges.
    /// A paused operation that had never started becomes ready again, for its queue to start. A restored
    /// paused download that was cancelled before it continued finishes, cancelled, as `start()` ends it.
    public func resume() {
        startOrResume { $0.resume() }
    }

    /// Waits until the operation finished, as `Operation` does — from a handler on the library's
    /// callback queue too (AFN's synchronous wrappers, `addOperations(_:waitUntilFinished: true)`):
    /// the library's callbacks queued there meanwhile, this operation's handlers among them, run inside
    /// the wait, one at a time as ever. Inside this operation's own handlers, where it cannot finish
    /// before they return, it returns at once: its outcome (`response`, `error`, `responseObject`) is
    /// already final. On a completion queue of your own, waiting for an operation that uses the same
    /// serial queue deadlocks, as with `Operation`.
    open override func waitUntilFinished() {
        guard CallbackQueues.isOnCallbackQueue else { return super.waitUntilFinished() }
        let ownHandlers = state.withLock {
            $0.run.handlersRunning && !$0.lifecycle.isFinished
                && $0.configuration.effectiveCompletionQueue === CallbackQueues.callback
        }
        if ownHandlers { return }
        CallbackWork.shared.run { isFinished }
    }

    // MARK: - NSSecureCoding

    /// `true`: decoding checks every class. Decode with `SafeArchive.unarchive(_:from:)`, which refuses
    /// unexpected classes instead of letting corelibs' unarchiver stop the process.
    public class var supportsSecureCoding: Bool { true }

    /// Archives the request, the state (an executing operation is paused first and archived paused,
    /// as AFNetworking did; archiving waits up to 2 s for the pause to reach the network thread), the
    /// response head, the error, the body so far and where a download continues,
    /// `shouldUseCredentialStorage` and the security policy. Never archived: blocks, queues, streams,
    /// `credential` and `clientCertificate`.
    open func encode(with coder: NSCoder) {
        encodeArchive(with: coder)
    }

    /// Restores an archived operation. A paused one continues with `resume()` (or when a queue starts
    /// it) with a Range request; a finished one comes back finished, with its response, body, error and
    /// (for `HTTPRequestOperation`) `responseObject`, and never runs again (`copy()` makes one that
    /// does). `nil` when the archive has no usable URL.
    public required convenience init?(coder: NSCoder) {
        guard let request = URLConnectionOperation.decodeRequest(from: coder) else {
            // Under SafeArchive the failure is recorded and thrown; a nil here would only make
            // corelibs print "failed to decode" to stderr on the way.
            guard ArchiveCheck.current != nil else { return nil }
            self.init(request: URLRequest(url: URL(fileURLWithPath: "/")))
            return
        }
        self.init(request: request)
        restore(from: coder)
    }

    /// Restores the archived state onto an operation that `init?(coder:)` just created for the archived
    /// request — the decoding half of `encode(with:)`. A subclass that archives keys of its own
    /// overrides both: `encode(with:)` writes them after `super`, `restore(from:)` calls `super` first,
    /// then reads them (`init?(coder:)` is a required convenience initializer and stays the library's).
    /// On an operation that was started, paused or cancelled it changes nothing: an archive's state
    /// is only ever the first thing an operation gets.
    open func restore(from coder: NSCoder) {
        restoreArchive(from: coder)
    }

    // MARK: - NSCopying

    /// A fresh, ready operation for the same request with the same configuration (AFN semantics:
    /// success/failure blocks and the output stream are not copied).
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = type(of: self).init(request: request)
        // Copied outside the lock: copying the security policy calls its open `copy()`.
        let configuration = state.withLock { $0.configuration }.copied()
        copy.apply(configuration)
        copy.eventMonitors = eventMonitors
        if copy.serviceContext == nil { copy.serviceContext = serviceContext }
        return copy
    }

    // MARK: - Subclass hooks of the end (see `transferDidEnd(on:group:batch:)`)

    /// Where `prepareHandlers()` runs: `nil` for at once, on the caller's queue (the delivery queue
    /// when `onDeliveryQueue`), or another queue. The base class prepares at once unless the cache's
    /// part of the end may do file work or run the app's block (`cacheEndNeedsItsOwnQueue`).
    func preparationQueue(onDeliveryQueue: Bool) -> DispatchQueue? {
        cacheEndNeedsItsOwnQueue ? CallbackQueues.processing : nil
    }

    /// The work before the handlers, off the completion queue: the cache's part of the end (see
    /// `settleCache()`). Subclasses add theirs after calling `super`.
    func prepareHandlers() {
        settleCache()
    }

    /// The handlers, on the completion queue, before the operation finishes. The base class has none;
    /// `HTTPRequestOperation` runs its success or failure block.
    func runHandlers() {}
}
