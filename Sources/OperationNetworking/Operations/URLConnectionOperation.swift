import Dispatch
import Foundation
import Synchronization
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

    /// Guards `mutable` and the stored `var`s of subclasses (leaf lock: nothing is called while it is held).
    let lock = NSLock()
    /// Every mutable field of the operation, its life and its configuration; guarded by `lock`, which
    /// already excludes overlapping access (hence no runtime exclusivity check on every use).
    @exclusivity(unchecked) var mutable: MutableState

    /// Whether the request reads from `URLCache.shared` (its cache policy and method, which nothing
    /// changes after init), decided once rather than at the start and again at the end.
    let readsCache: Bool
    /// Whether a progress block was ever set (never cleared; stored before the setter returns): until
    /// one was, a piece of body sent or received is reported without taking `lock`.
    let progressBlockEverSet = Atomic<Bool>(false)

    /// Creates an operation for `request` (designated initializer). Nothing is sent until `start()`.
    public required init(request: URLRequest) {
        mutable = MutableState(request: request)
        readsCache = URLConnectionOperation.readsCache(request)
        super.init()
    }

    // MARK: - Request and response

    /// The request as given (and as changed by `inputStream`); redirects do not change it.
    public var request: URLRequest { lock.withLock { mutable.request } }
    /// The request of the transfer under way: after a redirect, the redirected one.
    public var currentRequest: URLRequest { lock.withLock { mutable.currentRequest } }
    /// The last response received (an `HTTPURLResponse` for http and https); `nil` before the first.
    open var response: URLResponse? {
        lock.withLock {
            if mutable.response == nil, let head = mutable.head { mutable.response = head.makeResponse() }
            return mutable.response
        }
    }
    /// The transport error, or `URLError(.cancelled)` after `cancel()`; `nil` while none occurred.
    open var error: Error? { transportError }
    /// The last response head, as received (no `HTTPURLResponse` built).
    final var responseHead: ResponseHead? { lock.withLock { mutable.head } }
    /// The transport (or cancel) error alone, whatever a subclass adds to `error`; completed with the
    /// failing URL and a description where the transport left them out.
    final var transportError: Error? {
        // Read for every operation that ends: the URL is copied only when there is an error to complete.
        lock.lock()
        let failure = transportFailureLocked()
        lock.unlock()
        return failure.map { TransportError.completed($0.error, url: $0.url) }
    }
    /// The transport error and the URL to complete it with (see `transportError`). Call with `lock` held.
    final func transportFailureLocked() -> (error: Error, url: URL?)? {
        mutable.error.map { ($0, mutable.currentRequest.url) }
    }
    /// The body received, when no custom `outputStream` was set; `nil` after a transport failure
    /// or cancel (as AFNetworking) and until the transfer ended.
    public var responseData: Data? { lock.withLock { mutable.responseData } }
    /// Timing and connection facts, once the transfer ended.
    public var metrics: TransferMetrics? { lock.withLock { mutable.metrics } }

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
        get { lock.withLock { mutable.securityPolicy } }
        set { lock.withLock { mutable.securityPolicy = newValue } }
    }
    /// The request body stream: reads and sets `request.httpBodyStream` (clearing `httpBody`).
    public var inputStream: InputStream? {
        get { lock.withLock { mutable.request.httpBodyStream } }
        set {
            lock.withLock {
                mutable.request.httpBodyStream = newValue
                mutable.currentRequest = mutable.request
            }
        }
    }
    /// Where the response body goes. Default `nil`: in memory, as `responseData`. Set it before
    /// `start()`; the operation opens it if needed and closes it when it finishes. A stream that stops
    /// accepting bytes fails the operation with the stream's error.
    public var outputStream: OutputStream? {
        get { lock.withLock { mutable.outputStream } }
        set { lock.withLock { mutable.outputStream = newValue } }
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
        get { lock.withLock { mutable.userInfo } }
        set { lock.withLock { mutable.userInfo = newValue } }
    }

    /// Sets the block called as the request body goes out (on the completion queue, coalesced:
    /// `bytesWritten` is the count since the previous call). `nil` removes it.
    @preconcurrency
    public func setUploadProgressBlock(_ block: UploadProgressBlock?) {
        lock.withLock { mutable.configuration.uploadProgressBlock = block }
        if block != nil { progressBlockEverSet.store(true, ordering: .releasing) }
    }
    /// Sets the block called as the response body arrives (on the completion queue, coalesced:
    /// `bytesRead` is the count since the previous call; totals count a resumed prefix). `nil` removes it.
    @preconcurrency
    public func setDownloadProgressBlock(_ block: DownloadProgressBlock?) {
        lock.withLock { mutable.configuration.downloadProgressBlock = block }
        if block != nil { progressBlockEverSet.store(true, ordering: .releasing) }
    }
    /// Sets the block that answers each 401/407 challenge round (on the network thread: keep it short).
    /// `previousFailureCount` counts the rounds already answered. `.performDefaultHandling` uses
    /// `credential` on the first round, then `URLCredentialStorage.shared` when
    /// `shouldUseCredentialStorage`; `.cancelAuthenticationChallenge` delivers the 401/407 and fails
    /// with `URLError(.userCancelledAuthentication)`, the credential never sent;
    /// `.rejectProtectionSpace` delivers the 401/407. Without a block, default handling applies.
    @preconcurrency
    public func setWillSendRequestForAuthenticationChallengeBlock(_ block: AuthenticationChallengeBlock?) {
        lock.withLock { mutable.configuration.challengeBlock = block }
    }

    /// Sets the block that decides whether (and what) a successful GET response goes into
    /// `URLCache.shared`; it runs before the handlers, on the library's delivery queue (bodies up to
    /// 64 KiB) or processing queue (larger ones), never on the completion queue. Setting a block opts the
    /// operation into caching (see `URLRequest.cachePolicy` in Migration.md); `nil` removes it.
    @preconcurrency
    public func setCacheResponseBlock(_ block: CacheResponseBlock?) {
        lock.withLock { mutable.configuration.cacheBlock = block }
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
        get { lock.withLock { mutable.configuration.maximumResponseSize } }
        set { lock.withLock { mutable.configuration.maximumResponseSize = newValue.map { max(0, $0) } } }
    }

    /// Sets the block that decides each redirect (on the network thread: keep it short). Without one,
    /// redirects are followed (16 hops at most, then `URLError(.httpTooManyRedirects)`).
    @preconcurrency
    public func setRedirectResponseBlock(_ block: RedirectResponseBlock?) {
        lock.withLock { mutable.configuration.redirectBlock = block }
    }

    // MARK: - Operation

    /// `true`: the work happens on the network thread.
    open override var isAsynchronous: Bool { true }
    /// Executing from `start()` until every completion handler returned (paused: `false`).
    open override var isExecuting: Bool { lock.withLock { mutable.lifecycle.isExecuting } }
    /// Finished once the transfer ended and every completion handler returned.
    open override var isFinished: Bool { lock.withLock { mutable.lifecycle.isFinished } }
    /// Whether `cancel()` took effect: it does until the operation learned that its transfer ended;
    /// a later `cancel()` changes nothing (the response won), so a success handler never sees `true`.
    open override var isCancelled: Bool { lock.withLock { mutable.lifecycle.isCancelled } }
    /// Dependencies finished, and not parked by a `pause()` before it ever started.
    open override var isReady: Bool {
        let mayStart = lock.withLock { mutable.lifecycle.mayStart }
        return mayStart && super.isReady
    }
    /// Whether the operation is paused (or a pause is on its way to the network thread).
    public var isPaused: Bool { lock.withLock { mutable.lifecycle.isPaused } }

    /// Foundation's completion block, run as AFNetworking's override ran it: after the operation
    /// turned finished, on `completionQueue` (default: the library's callback queue, not a global
    /// queue) inside `completionGroup`. It is released once it ran, like every block of the operation.
    open override var completionBlock: (@Sendable () -> Void)? {
        get { lock.withLock { mutable.completionBlock } }
        set { lock.withLock { mutable.completionBlock = newValue } }
    }

    /// Hands the request to the network thread; a cancelled operation finishes without network traffic.
    open override func start() {
        let (action, transfer) = lock.withLock { prepare(mutable.lifecycle.start()) }
        perform(action, transfer: transfer)
    }

    /// Cancels: before start, nothing is ever sent; while executing, the transfer stops at the network
    /// thread's next turn and no request of it starts after this returns; while paused (or pausing),
    /// the operation finishes. Failure handlers run with `URLError(.cancelled)`. Once the operation
    /// learned that its transfer ended, a cancel changes nothing.
    open override func cancel() {
        let (took, action, transfer) = lock.withLock { () -> (Bool, OperationState.Action, Transfer?) in
            let before = mutable.lifecycle.isCancelled
            let (action, transfer) = prepare(mutable.lifecycle.cancel())
            return (!before && mutable.lifecycle.isCancelled, action, transfer)
        }
        guard took else { return }
        super.cancel()   // Foundation's own bookkeeping: a cancelled operation is ready whatever its dependencies
        perform(action, transfer: transfer)
    }

    /// Stops an executing transfer, keeping the bytes received; the operation keeps its queue slot.
    /// Posts `operationDidFinish`. A `resume()` or `cancel()` right after takes effect once the pause
    /// reached the network thread. Pausing a finished or cancelled operation does nothing.
    public func pause() {
        let (action, transfer) = lock.withLock { prepare(mutable.lifecycle.pause()) }
        perform(action, transfer: transfer)
    }

    /// Continues a paused operation, with `Range: bytes=N-` when the server supports ranges.
    /// A paused operation that had never started becomes ready again, for its queue to start.
    public func resume() {
        let (action, transfer) = lock.withLock { prepare(mutable.lifecycle.resume()) }
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
        let configuration = lock.withLock { mutable.configuration.copied() }
        copy.apply(configuration)
        copy.eventMonitors = eventMonitors
        return copy
    }

    // MARK: - Internal: the finishing pipeline

    /// The transfer is over (`error` tells how). Subclasses run their handlers, then call `finishOperation()`.
    /// `batch` (on the delivery queue) gathers completion-queue work; without one it is dispatched at once.
    func transferDidEnd(batch: CompletionBatch? = nil) {
        let queue = effectiveCompletionQueue
        let work: @Sendable () -> Void = { [self] in
            storeInCacheIfAllowed()
            finishOperation(runningOn: queue)
        }
        if let batch {
            batch.add(on: queue, group: effectiveCompletionGroup, work)
        } else {
            queue.async(group: effectiveCompletionGroup, execute: work)
        }
    }

    /// Runs the finish hooks, closes the output stream, turns the operation finished, then runs the
    /// completion block on the completion queue. Every block is released here, so an object that its
    /// own operation's block captured is freed once the operation finished (AFN broke cycles this way).
    /// `queue` is the queue the caller runs on, when it knows (the notification is then posted without
    /// asking dispatch where it runs).
    func finishOperation(runningOn queue: DispatchQueue? = nil) {
        // Two acquisitions of the lock, each also reading the observers (most operations have none):
        // the first before the hooks, the second with the finish itself, so that observers made in
        // between (a `value()` waiter) are seen by the same acquisition that makes `isFinished` true.
        // Taken and released by hand: tuples of blocks through `withLock`'s generic result are
        // re-abstracted both ways.
        lock.lock()
        let hooks = mutable.finishHooks, stream = mutable.outputStreamOpened ? mutable.outputStream : nil
        let observers = mutable.observers
        if !hooks.isEmpty { mutable.finishHooks.removeAll() }
        lock.unlock()
        hooks.forEach { $0() }
        stream?.close()
        observers?.operationWillFinish(self)   // monitors hear of the finish before isFinished
        lock.lock()
        let action = mutable.lifecycle.handlersRan()
        guard case .finish = action else {
            lock.unlock()
            return
        }
        releaseBlocksLocked()
        let completion = mutable.completionBlock
        mutable.completionBlock = nil
        let observersAtFinish = mutable.observers
        let completionQueue = completion == nil ? nil : mutable.configuration.effectiveCompletionQueue
        let completionGroup = completion == nil ? nil : mutable.configuration.effectiveCompletionGroup
        lock.unlock()
        // Only "isFinished" is announced: corelibs has no KVO, and its handler for "isExecuting" acts only on
        // a change *to* executing (corelibs' Operation.observeValue), so announcing the drop would cost work for nothing.
        willChangeValue(forKey: "isFinished")
        didChangeValue(forKey: "isFinished")
        observersAtFinish?.operationDidFinish()   // resumes `value()` waiters
        post(.operationDidFinish, runningOn: queue)
        if let completion, let completionQueue {
            completionQueue.async(group: completionGroup, execute: completion)
        }
    }

    /// Drops every block the caller set (progress, redirect, challenge, cache); subclasses drop theirs
    /// and call `super`. Called once, when the operation finishes, with `lock` held (in the same
    /// acquisition that decides the finish: two lock round trips fewer than a call of its own).
    func releaseBlocksLocked() {
        mutable.configuration.releaseBlocks()
        mutable.uploadReporter = nil
        mutable.downloadReporter = nil
    }

    /// Adds work to run on the completion queue just before the operation turns finished.
    func addFinishHook(_ hook: @escaping @Sendable () -> Void) {
        lock.withLock { mutable.finishHooks.append(hook) }
    }

    /// The operation's completion queue and group, defaults applied.
    var effectiveCompletionQueue: DispatchQueue { lock.withLock { mutable.configuration.effectiveCompletionQueue } }
    var effectiveCompletionGroup: DispatchGroup { lock.withLock { mutable.configuration.effectiveCompletionGroup } }

    // MARK: - Private

    /// Carries the part of an action that must happen under the lock: a start makes its transfer
    /// (consuming the kept bytes), a cancel marks the running transfer so that no request of it starts
    /// from now on. Returns the action and the transfer it concerns. Call with `lock` held.
    func prepare(_ action: OperationState.Action) -> (OperationState.Action, Transfer?) {
        switch action {
        case .startTransfer(let kept):
            return (action, makeTransfer(continuing: kept))
        case .cancelTransfer:
            mutable.transfer?.requestCancel()
            return (action, mutable.transfer)
        case .none, .pauseTransfer, .completeCancelled, .readinessChanged, .pauseSettled, .deliver, .finish:
            return (action, mutable.transfer)
        }
    }

    /// Builds the transfer for a start or a continuation of `kept`; called with `lock` held.
    private func makeTransfer(continuing kept: KeptDownload?) -> Transfer {
        mutable.currentRequest = mutable.request
        // A run's outcome belongs to that run: a restored finished operation runs again from nothing.
        mutable.error = nil
        if kept == nil {
            mutable.head = nil
            mutable.response = nil
            mutable.responseData = nil
        }
        let configuration = mutable.configuration
        let transfer = Transfer(request: mutable.request, outputStream: mutable.outputStream, resumeFrom: kept?.point,
                                initialBody: kept?.bytes ?? Data(),
                                // No policy set means the default one, which the transport takes as no
                                // snapshot (`nil`): copying the default's arrays and sets cost retains.
                                security: configuration.securityPolicy?.snapshot,
                                clientCertificate: configuration.clientCertificate,
                                maximumBodySize: configuration.maximumResponseSize, retryPolicy: configuration.retryPolicy,
                                proxy: configuration.proxy, delegate: self)
        mutable.transfer = transfer
        return transfer
    }

    /// Carries out what the state machine decided, outside the lock. `batch` gathers completion-queue
    /// work when the action comes from a transfer's end on the delivery queue.
    func perform(_ action: OperationState.Action, transfer: Transfer?, batch: CompletionBatch? = nil) {
        switch action {
        case .none:
            return
        case .startTransfer:
            guard let transfer else { return }
            // An answer from the cache, or an output stream that will not open, still goes through
            // the network thread, so that a pause or cancel already on its way meets it there.
            if let local = localOutcome(writingTo: transfer.outputStream) { transfer.endOnArrival(local) }
            willChangeValue(forKey: "isExecuting")
            didChangeValue(forKey: "isExecuting")
            // operationDidStart is posted once the network thread took the transfer in.
            NetworkThread.shared.submit(.add(transfer))
        case .cancelTransfer:
            if let transfer { NetworkThread.shared.submit(.cancel(transfer)) }
        case .pauseTransfer:
            if let transfer { NetworkThread.shared.submit(.pause(transfer)) }
            post(.operationDidFinish)
        case .completeCancelled:
            lock.withLock { mutable.recordCancel() }
            transferDidEnd(batch: batch)
        case .deliver:
            transferDidEnd(batch: batch)   // the outcome was stored with the transition
        case .readinessChanged:
            willChangeValue(forKey: "isReady")
            didChangeValue(forKey: "isReady")
        case .pauseSettled:
            return   // transfer(_:didFinishWith:) wakes archivers after every end of a pause
        case .finish:
            return   // finishOperation() carries it out, with the completion block it took under the lock
        }
    }
}
