import Dispatch
import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif

extension Notification.Name {
    /// Posted (object: the operation, no `userInfo`) when an operation's transfer starts, and again on
    /// every resume. Posted asynchronously from the library's callback queue.
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
/// - Threading: every property and method may be used from any thread. Mutable state lives behind
///   one `NSLock` (`lock`); KVO-style notifications, user blocks and network-thread commands are
///   issued after the lock is released. Progress blocks run on `completionQueue` (or the library's
///   callback queue), coalesced; the redirect block runs on the network thread.
/// - Warning: waiting for an operation (`waitUntilFinished()`) from inside its own completion queue
///   would deadlock; on the library's callback queue the call returns without waiting.
open class URLConnectionOperation: Operation, NSSecureCoding, NSCopying, @unchecked Sendable {
    /// A redirect decision: return the request to follow (possibly changed) or `nil` to stop.
    public typealias RedirectResponseBlock = @Sendable (URLConnectionOperation, URLRequest, URLResponse?) -> URLRequest?
    /// Upload progress: `(bytesWritten, totalBytesWritten, totalBytesExpectedToWrite)`, -1 when unknown.
    public typealias UploadProgressBlock = @Sendable (Int, Int64, Int64) -> Void
    /// Download progress: `(bytesRead, totalBytesRead, totalBytesExpectedToRead)`, -1 when unknown.
    public typealias DownloadProgressBlock = @Sendable (Int, Int64, Int64) -> Void
    /// How to answer an authentication challenge (Foundation's dispositions).
    public typealias AuthChallengeDisposition = URLSession.AuthChallengeDisposition
    /// Decides what goes into `URLCache.shared`: return the response to store (possibly changed) or `nil`.
    public typealias CacheResponseBlock = @Sendable (URLConnectionOperation, CachedURLResponse) -> CachedURLResponse?
    /// Answers a 401/407 challenge: a disposition and, for `.useCredential`, the credential.
    public typealias AuthenticationChallengeBlock =
        @Sendable (URLConnectionOperation, URLAuthenticationChallenge) -> (AuthChallengeDisposition, URLCredential?)

    /// Guards every stored `var` of this class (leaf lock: nothing is called while it is held).
    let lock = NSLock()
    /// Signalled when a pause reached the network thread (archiving waits for the bytes to settle).
    /// Made on first use, under `lock` (a `lazy var` would race): only paused operations need it.
    var pauseSettled: NSCondition {
        lock.withLock {
            if let condition = storedPauseSettled { return condition }
            let condition = NSCondition()
            storedPauseSettled = condition
            return condition
        }
    }
    private var storedPauseSettled: NSCondition?        // guarded by lock
    var state = OperationState()                       // guarded by lock
    var storedRequest: URLRequest                       // guarded by lock
    var storedCurrentRequest: URLRequest                // guarded by lock
    /// The last response head; `storedResponse` is built from it on first use (off the network thread).
    var storedHead: ResponseHead?                       // guarded by lock
    var storedResponse: URLResponse?                    // guarded by lock
    var storedError: Error?                             // guarded by lock
    var storedResponseData: Data?                       // guarded by lock
    var storedMetrics: TransferMetrics?                 // guarded by lock
    /// The transfer on (or last on) the network thread.
    var transfer: Transfer?                             // guarded by lock
    /// Bytes of a paused in-memory download, handed to the resuming transfer.
    var partialData = Data()                            // guarded by lock
    /// Where a paused download continues from.
    var resumePoint: ResumePoint?                               // guarded by lock
    var storedShouldUseCredentialStorage = true         // guarded by lock
    var storedCredential: URLCredential?                // guarded by lock
    /// The policy, made on first use: most operations never read theirs, and the default's
    /// snapshot is a constant.
    var explicitSecurityPolicy: SecurityPolicy?         // guarded by lock
    /// The operation's policy (call with `lock` held).
    var storedSecurityPolicy: SecurityPolicy {
        get {
            if let policy = explicitSecurityPolicy { return policy }
            let policy = SecurityPolicy.default()
            explicitSecurityPolicy = policy
            return policy
        }
        set { explicitSecurityPolicy = newValue }
    }
    var storedOutputStream: OutputStream?               // guarded by lock
    var outputStreamOpened = false                      // guarded by lock
    var storedCompletionQueue: DispatchQueue?           // guarded by lock
    var storedCompletionGroup: DispatchGroup?           // guarded by lock
    var storedUserInfo: [String: Any] = [:]             // guarded by lock
    var uploadProgressBlock: UploadProgressBlock?       // guarded by lock
    var downloadProgressBlock: DownloadProgressBlock?   // guarded by lock
    var uploadReporter: ProgressReporter?               // guarded by lock
    var downloadReporter: ProgressReporter?             // guarded by lock
    var redirectBlock: RedirectResponseBlock?           // guarded by lock
    var challengeBlock: AuthenticationChallengeBlock?   // guarded by lock
    var cacheBlock: CacheResponseBlock?                 // guarded by lock
    var storedClientCertificate: ClientCertificate?     // guarded by lock
    var storedMaximumResponseSize: Int64?               // guarded by lock
    var storedRetryPolicy = RetryPolicy.none            // guarded by lock
    /// Attempts made so far (0 before the first starts).
    var storedAttempts = 0                              // guarded by lock
    /// Run once, on the completion queue, just before the operation turns finished (batches use it).
    var finishHooks: [@Sendable () -> Void] = []        // guarded by lock
    /// The inherited `completionBlock`, kept here so that Foundation never runs it on a global queue.
    var storedCompletionBlock: (@Sendable () -> Void)?  // guarded by lock
    /// Event monitors and `value()` waiters (see EventMonitor.swift); guarded by this operation's
    /// `lock`, which it is never called under.
    let observers: OperationObservers

    /// Whether the request reads from `URLCache.shared` (its cache policy and method, which nothing
    /// changes after init), decided once rather than at the start and again at the end.
    let readsCache: Bool

    /// Creates an operation for `request` (designated initializer). Nothing is sent until `start()`.
    public required init(request: URLRequest) {
        storedRequest = request
        storedCurrentRequest = request
        readsCache = URLConnectionOperation.readsCache(request)
        observers = OperationObservers(lock: lock)
        super.init()
    }

    // MARK: - Request and response

    /// The request as given (and as changed by `inputStream`); redirects do not change it.
    public var request: URLRequest { lock.withLock { storedRequest } }
    /// The request of the transfer under way: after a redirect, the redirected one.
    public var currentRequest: URLRequest { lock.withLock { storedCurrentRequest } }
    /// The last response received (an `HTTPURLResponse` for http and https); `nil` before the first.
    open var response: URLResponse? {
        lock.withLock {
            if storedResponse == nil, let head = storedHead { storedResponse = head.makeResponse() }
            return storedResponse
        }
    }
    /// The transport error, or `URLError(.cancelled)` after `cancel()`; `nil` while none occurred.
    open var error: Error? { transportError }
    /// The last response head, as received (no `HTTPURLResponse` built).
    final var responseHead: ResponseHead? { lock.withLock { storedHead } }
    /// The transport (or cancel) error alone, whatever a subclass adds to `error`; completed with the
    /// failing URL and a description where the transport left them out.
    final var transportError: Error? {
        // Read for every operation that ends: the URL is copied only when there is an error to complete.
        let failure = lock.withLock { () -> (error: Error, url: URL?)? in
            storedError.map { ($0, storedCurrentRequest.url) }
        }
        return failure.map { TransportError.completed($0.error, url: $0.url) }
    }
    /// The body received, when no custom `outputStream` was set; `nil` after a transport failure
    /// or cancel (as AFNetworking) and until the transfer ended.
    public var responseData: Data? { lock.withLock { storedResponseData } }
    /// Timing and connection facts, once the transfer ended.
    public var metrics: TransferMetrics? { lock.withLock { storedMetrics } }

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
        get { lock.withLock { storedShouldUseCredentialStorage } }
        set { lock.withLock { storedShouldUseCredentialStorage = newValue } }
    }
    /// The credential answering a 401/407 challenge. Default `nil`.
    public var credential: URLCredential? {
        get { lock.withLock { storedCredential } }
        set { lock.withLock { storedCredential = newValue } }
    }
    /// Decides whether the server's certificate chain is trusted, before any request byte is sent.
    /// Default `SecurityPolicy.default()`: system trust, host name validated, no pinning.
    public var securityPolicy: SecurityPolicy {
        get { lock.withLock { storedSecurityPolicy } }
        set { lock.withLock { storedSecurityPolicy = newValue } }
    }
    /// The request body stream: reads and sets `request.httpBodyStream` (clearing `httpBody`).
    public var inputStream: InputStream? {
        get { lock.withLock { storedRequest.httpBodyStream } }
        set {
            lock.withLock {
                storedRequest.httpBodyStream = newValue
                storedCurrentRequest = storedRequest
            }
        }
    }
    /// Where the response body goes. Default `nil`: in memory, as `responseData`. Set it before
    /// `start()`; the operation opens it if needed and closes it when it finishes. A stream that stops
    /// accepting bytes fails the operation with the stream's error.
    public var outputStream: OutputStream? {
        get { lock.withLock { storedOutputStream } }
        set { lock.withLock { storedOutputStream = newValue } }
    }
    /// Where completion handlers and progress blocks run. Default `nil`: the library's shared serial
    /// callback queue (not the main queue: a Linux program rarely runs a main loop).
    public var completionQueue: DispatchQueue? {
        get { lock.withLock { storedCompletionQueue } }
        set { lock.withLock { storedCompletionQueue = newValue } }
    }
    /// The group completion handlers run in. Default `nil`: a group private to the library.
    public var completionGroup: DispatchGroup? {
        get { lock.withLock { storedCompletionGroup } }
        set { lock.withLock { storedCompletionGroup = newValue } }
    }
    /// Free for the caller; the library never reads it.
    public var userInfo: [String: Any] {
        get { lock.withLock { storedUserInfo } }
        set { lock.withLock { storedUserInfo = newValue } }
    }

    /// Sets the block called as the request body goes out (on the completion queue, coalesced:
    /// `bytesWritten` is the count since the previous call). `nil` removes it.
    public func setUploadProgressBlock(_ block: UploadProgressBlock?) {
        lock.withLock { uploadProgressBlock = block }
    }
    /// Sets the block called as the response body arrives (on the completion queue, coalesced:
    /// `bytesRead` is the count since the previous call; totals count a resumed prefix). `nil` removes it.
    public func setDownloadProgressBlock(_ block: DownloadProgressBlock?) {
        lock.withLock { downloadProgressBlock = block }
    }
    /// Sets the block that answers each 401/407 challenge round (on the network thread: keep it short).
    /// `previousFailureCount` counts the rounds already answered. `.performDefaultHandling` uses
    /// `credential` on the first round, then `URLCredentialStorage.shared` when
    /// `shouldUseCredentialStorage`; `.cancelAuthenticationChallenge` delivers the 401/407 and fails
    /// with `URLError(.userCancelledAuthentication)`, the credential never sent;
    /// `.rejectProtectionSpace` delivers the 401/407. Without a block, default handling applies.
    public func setWillSendRequestForAuthenticationChallengeBlock(_ block: AuthenticationChallengeBlock?) {
        lock.withLock { challengeBlock = block }
    }

    /// Sets the block that decides whether (and what) a successful GET response goes into
    /// `URLCache.shared`; it runs before the handlers, on the library's delivery queue (bodies up to
    /// 64 KiB) or processing queue (larger ones), never on the completion queue. Setting a block opts the
    /// operation into caching (see `URLRequest.cachePolicy` in Migration.md); `nil` removes it.
    public func setCacheResponseBlock(_ block: CacheResponseBlock?) {
        lock.withLock { cacheBlock = block }
    }

    /// A client certificate for servers that ask for one (mutual TLS). Default `nil`.
    public var clientCertificate: ClientCertificate? {
        get { lock.withLock { storedClientCertificate } }
        set { lock.withLock { storedClientCertificate = newValue } }
    }

    /// The most response-body bytes the operation accepts (after decoding: a compressed body counts
    /// as what it inflates to), or `nil` for no limit (the default, as AFNetworking). More fails the
    /// operation with `URLError(.dataLengthExceedsMaximum)` as soon as it is known: at the head when an
    /// uncompressed `Content-Length` announces more, else when the bytes arrive. Set it before `start()`.
    public var maximumResponseSize: Int64? {
        get { lock.withLock { storedMaximumResponseSize } }
        set { lock.withLock { storedMaximumResponseSize = newValue.map { max(0, $0) } } }
    }

    /// Sets the block that decides each redirect (on the network thread: keep it short). Without one,
    /// redirects are followed (16 hops at most, then `URLError(.httpTooManyRedirects)`).
    public func setRedirectResponseBlock(_ block: RedirectResponseBlock?) {
        lock.withLock { redirectBlock = block }
    }

    // MARK: - Operation

    /// `true`: the work happens on the network thread.
    open override var isAsynchronous: Bool { true }
    /// Executing from `start()` until every completion handler returned (paused: `false`).
    open override var isExecuting: Bool { lock.withLock { state.isExecuting } }
    /// Finished once the transfer ended and every completion handler returned.
    open override var isFinished: Bool { lock.withLock { state.isFinished } }
    /// Dependencies finished, and not parked by a `pause()` before it ever started.
    open override var isReady: Bool {
        let parked = lock.withLock { state.phase == .paused(started: false) && resumePoint == nil }
        return !parked && super.isReady
    }
    /// Whether the operation is paused.
    public var isPaused: Bool { lock.withLock { state.isPaused } }

    /// Foundation's completion block, run as AFNetworking's override ran it: after the operation
    /// turned finished, on `completionQueue` (default: the library's callback queue, not a global
    /// queue) inside `completionGroup`. It is released once it ran, like every block of the operation.
    open override var completionBlock: (@Sendable () -> Void)? {
        get { lock.withLock { storedCompletionBlock } }
        set { lock.withLock { storedCompletionBlock = newValue } }
    }

    /// Hands the request to the network thread; a cancelled operation finishes without network traffic.
    open override func start() {
        let (action, transfer) = lock.withLock { () -> (OperationState.Action, Transfer?) in
            let action = state.start(cancelled: isCancelled)
            return (action, action == .startTransfer ? makeTransfer() : nil)
        }
        perform(action, transfer: transfer)
    }

    /// Cancels: before start, nothing is sent; while executing, the transfer stops at once; while
    /// paused, the operation finishes. Failure handlers run with `URLError(.cancelled)`.
    open override func cancel() {
        guard !isFinished else { return }
        super.cancel()
        let (action, transfer) = lock.withLock { (state.cancel(), self.transfer) }
        perform(action, transfer: transfer)
    }

    /// Stops an executing transfer, keeping the bytes received; the operation keeps its queue slot.
    /// Posts `operationDidFinish`. Pausing a finished or cancelled operation does nothing.
    public func pause() {
        guard !isCancelled else { return }
        let (action, transfer) = lock.withLock { (state.pause(), self.transfer) }
        perform(action, transfer: transfer)
    }

    /// Continues a paused operation, with `Range: bytes=N-` when the server supports ranges.
    /// A paused operation that had never started becomes ready again, for its queue to start.
    public func resume() {
        let (action, transfer) = lock.withLock { () -> (OperationState.Action, Transfer?) in
            let action = state.resume()
            return (action, action == .startTransfer ? makeTransfer() : nil)
        }
        perform(action, transfer: transfer)
    }

    /// Waits as `Operation` does — except on the library's callback queue while this operation uses it
    /// (`completionQueue == nil`): its handlers need that queue, so the wait could never end, and the
    /// call returns at once without waiting (check `isFinished` afterwards). Nothing is printed.
    open override func waitUntilFinished() {
        if CallbackQueues.isOnCallbackQueue && completionQueue == nil && !isFinished { return }
        super.waitUntilFinished()
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
    /// it) with a Range request; a finished one comes back ready to run again (AFN). `nil` when the
    /// archive has no usable URL.
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
    open func restore(from coder: NSCoder) {
        restoreArchive(from: coder)
    }

    // MARK: - NSCopying

    /// A fresh, ready operation for the same request with the same configuration (AFN semantics:
    /// success/failure blocks and the output stream are not copied).
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = type(of: self).init(request: request)
        lock.withLock {
            copy.storedShouldUseCredentialStorage = storedShouldUseCredentialStorage
            copy.storedCredential = storedCredential
            copy.storedSecurityPolicy = (storedSecurityPolicy.copy() as? SecurityPolicy) ?? storedSecurityPolicy
            copy.storedCompletionQueue = storedCompletionQueue
            copy.storedCompletionGroup = storedCompletionGroup
            copy.uploadProgressBlock = uploadProgressBlock
            copy.downloadProgressBlock = downloadProgressBlock
            copy.redirectBlock = redirectBlock
            copy.challengeBlock = challengeBlock
            copy.cacheBlock = cacheBlock
            copy.storedClientCertificate = storedClientCertificate
            copy.storedMaximumResponseSize = storedMaximumResponseSize
            copy.storedRetryPolicy = storedRetryPolicy
        }
        copy.eventMonitors = eventMonitors
        return copy
    }

    // MARK: - Internal: the finishing pipeline

    /// The transfer is over (`error` tells how). Subclasses run their handlers, then call `finishOperation()`.
    /// `batch` (on the delivery queue) gathers completion-queue work; without one it is dispatched at once.
    func transferDidEnd(batch: CompletionBatch? = nil) {
        let work: @Sendable () -> Void = { [self] in
            storeInCacheIfAllowed()
            finishOperation()
        }
        if let batch {
            batch.add(on: effectiveCompletionQueue, group: effectiveCompletionGroup, work)
        } else {
            effectiveCompletionQueue.async(group: effectiveCompletionGroup, execute: work)
        }
    }

    /// Runs the finish hooks, closes the output stream, turns the operation finished, then runs the
    /// completion block on the completion queue. Every block is released here, so an object that its
    /// own operation's block captured is freed once the operation finished (AFN broke cycles this way).
    func finishOperation() {
        let (hooks, stream) = lock.withLock { () -> ([@Sendable () -> Void], OutputStream?) in
            defer { finishHooks.removeAll() }
            return (finishHooks, outputStreamOpened ? storedOutputStream : nil)
        }
        hooks.forEach { $0() }
        stream?.close()
        observers.operationWillFinish(self)   // monitors hear of the finish before isFinished
        let (finished, completion) = lock.withLock { () -> (Bool, (@Sendable () -> Void)?) in
            guard state.finish() else { return (false, nil) }
            defer { storedCompletionBlock = nil }
            return (true, storedCompletionBlock)
        }
        guard finished else { return }
        releaseBlocks()
        // Only "isFinished" is announced: corelibs has no KVO, and its handler for "isExecuting" acts only on
        // a change *to* executing (platform-notes §3), so announcing the drop cost ~3,000 instructions for nothing.
        willChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isFinished")
        observers.operationDidFinish()         // resumes `value()` waiters
        post(.operationDidFinish)
        if let completion {
            effectiveCompletionQueue.async(group: effectiveCompletionGroup, execute: completion)
        }
    }

    /// Drops every block the caller set (progress, redirect, challenge, cache); subclasses drop theirs
    /// and call `super`. Called once, when the operation finishes.
    func releaseBlocks() {
        lock.withLock {
            uploadProgressBlock = nil
            downloadProgressBlock = nil
            uploadReporter = nil
            downloadReporter = nil
            redirectBlock = nil
            challengeBlock = nil
            cacheBlock = nil
        }
    }

    /// Adds work to run on the completion queue just before the operation turns finished.
    func addFinishHook(_ hook: @escaping @Sendable () -> Void) {
        lock.withLock { finishHooks.append(hook) }
    }

    /// The operation's completion queue and group, defaults applied.
    var effectiveCompletionQueue: DispatchQueue { completionQueue ?? CallbackQueues.callback }
    var effectiveCompletionGroup: DispatchGroup { completionGroup ?? CallbackQueues.group }

    // MARK: - Private

    /// Builds the transfer for a start or resume; called with `lock` held.
    func makeTransfer() -> Transfer {
        let queue = storedCompletionQueue ?? CallbackQueues.callback
        uploadReporter = uploadProgressBlock.map { ProgressReporter(block: $0, queue: queue) }
        downloadReporter = downloadProgressBlock.map { ProgressReporter(block: $0, queue: queue) }
        let initialBody = partialData
        partialData = Data()
        storedCurrentRequest = storedRequest
        let transfer = Transfer(request: storedRequest, outputStream: storedOutputStream, resumeFrom: resumePoint,
                                initialBody: initialBody, security: explicitSecurityPolicy?.snapshot ?? SecurityPolicy.defaultSnapshot,
                                clientCertificate: storedClientCertificate,
                                maximumBodySize: storedMaximumResponseSize, retryPolicy: storedRetryPolicy, delegate: self)
        self.transfer = transfer
        return transfer
    }

    /// Carries out what the state machine decided, outside the lock.
    private func perform(_ action: OperationState.Action, transfer: Transfer?) {
        switch action {
        case .none:
            return
        case .startTransfer:
            guard let transfer else { return }
            if answerFromCache() { return }
            if let failure = openOutputStream() {
                lock.withLock { storedError = failure; _ = state.transferEnded() }
                transferDidEnd()
                return
            }
            willChangeValue(forKey: "isExecuting")
            didChangeValue(forKey: "isExecuting")
            // operationDidStart is posted once the network thread took the transfer in.
            NetworkThread.shared.submit(.add(transfer))
            if isCancelled { NetworkThread.shared.submit(.cancel(transfer)) }
        case .cancelTransfer:
            if let transfer { NetworkThread.shared.submit(.cancel(transfer)) }
        case .pauseTransfer:
            if let transfer { NetworkThread.shared.submit(.pause(transfer)) }
            post(.operationDidFinish)
        case .completeCancelled:
            lock.withLock { storedError = TransportError.cancelled(url: storedRequest.url) }
            transferDidEnd()
        case .readinessChanged:
            willChangeValue(forKey: "isReady")
            didChangeValue(forKey: "isReady")
        }
    }
}
