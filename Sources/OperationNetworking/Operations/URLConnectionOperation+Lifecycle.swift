import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tracing

extension URLConnectionOperation {
    /// Every mutable field of an operation, its life, its configuration and its outcome, as one value
    /// that only `state.withLock` reaches. What a queued operation needs is kept here; what only a run
    /// needs or leaves is `run`, kept out of line until the first start.
    struct State {
        /// Where the operation is in its life (the state machine).
        var lifecycle = OperationState()
        /// What the caller configured (shared with the manager that made the operation until changed).
        var configuration = OperationConfiguration()
        /// The request as given (and as changed by `inputStream`).
        var request: URLRequest
        var outputStream: OutputStream?
        var userInfo: [String: Any] = [:]
        /// Event monitors and `value()` waiters, made on first use (see `URLConnectionOperation.observers`).
        var observers: OperationObservers?
        /// The context the operation's span is a child of (see `URLConnectionOperation.serviceContext`).
        var serviceContext: ServiceContext?
        /// Run once, on the completion queue, just before the operation turns finished (batches use it).
        var finishHooks: [@Sendable () -> Void] = []
        /// The inherited `completionBlock`, kept here so that Foundation never runs it on a global queue.
        var completionBlock: (@Sendable () -> Void)?
        /// `HTTPRequestOperation`'s part: its serializer, handlers and serialized result (empty in a
        /// plain `URLConnectionOperation`), under the same lock, so that an operation has one.
        var handling = ResponseHandling()

        /// What the operation's runs need and leave (see `Run`), made at the first use: an app queues
        /// operations by the thousand, and a queued operation carries one empty reference instead of
        /// these fields. A reference, not a value, so that reading one of its fields copies nothing
        /// (a value kept out of line is copied, or its accessor's frame allocated, on every read).
        var run: Run {
            mutating get {
                if let runStorage { return runStorage }
                let made = Run()
                runStorage = made
                return made
            }
        }
        /// What `run` reads without making it: `nil` before the first use.
        var existingRun: Run? { runStorage }
        private var runStorage: Run?

        init(request: URLRequest, serviceContext: ServiceContext? = nil) {
            self.request = request
            self.serviceContext = serviceContext
        }

        /// The request of the transfer under way (after a redirect, the redirected one); before the
        /// first start, the request as given.
        var currentRequest: URLRequest { existingRun?.currentRequest ?? request }

        /// Ends the run as cancelled: the cancel error, and no body (as AFNetworking).
        mutating func recordCancel() {
            run.error = TransportError.cancelled(url: request.url)
            run.responseData = nil
        }

        /// Stores how the operation's run ended: how its transfer ended, or (without a transfer) the
        /// answer it got without the network.
        mutating func record(_ outcome: TransferOutcome, of transfer: Transfer?) {
            switch outcome {
            case .completed:
                if outputStream == nil { run.responseData = transfer.map(State.keptBody(of:)) }
            case .completedWithError(let failure):
                if outputStream == nil { run.responseData = transfer.map(State.keptBody(of:)) }
                run.error = failure
            case .answeredFromCache(let cached, let data):
                // Foundation's response is built from the head only if someone reads it.
                run.head = cached
                run.response = nil
                run.responseData = data
            case .failed(let failure):
                run.error = failure
            case .cancelled:
                recordCancel()   // a cancel won, whatever the transfer got
            case .paused:
                return   // not an end: the transfer's owner takes it as `transferPaused`
            case .retryRequested(_, let failure):
                // Ends a run only as a cancel (recorded as one); as a safeguard, never as a success.
                run.error = failure ?? TransportError.cancelled(url: request.url)
            }
        }

        /// The body as the operation keeps it. One that grew without a length to reserve (decoded as it
        /// inflated, or with no `Content-Length`) may sit in a buffer far larger than its bytes, and an
        /// operation is kept long after it finished: a small one (up to `inlinePreparationLimit`, a copy
        /// as quick as the rest of the end) is kept at its size.
        static func keptBody(of transfer: Transfer) -> Data {
            let body = transfer.body
            guard body.count <= URLConnectionOperation.inlinePreparationLimit, let head = transfer.head,
                  head.contentEncoding != nil || head.declaredContentLength == nil else { return body }
            return body.withUnsafeBytes { Data($0) }
        }

        /// The reporter for the next progress event: made when a block is set and none exists yet, so a
        /// block set while the transfer runs is called from the next event on. `nil` without a block.
        mutating func progressReporter(download: Bool, of operation: URLConnectionOperation) -> ProgressReporter? {
            if let existing = download ? run.downloadReporter : run.uploadReporter { return existing }
            let hasBlock = download ? configuration.downloadProgressBlock != nil : configuration.uploadProgressBlock != nil
            guard hasBlock else { return nil }
            // The reporter reads the block when it delivers, so replacing or removing it takes effect at
            // once. Weak: the operation owns its reporter, and a paused operation that is never
            // finished must still be freed.
            let reporter = ProgressReporter(queue: configuration.effectiveCompletionQueue) { [weak operation] in
                operation?.state.withLock {
                    download ? $0.configuration.downloadProgressBlock : $0.configuration.uploadProgressBlock
                }
            }
            if download { run.downloadReporter = reporter } else { run.uploadReporter = reporter }
            return reporter
        }
    }

    /// What only a run needs or leaves: its transfer, the cache's part in it, its outcome and what
    /// the operation counts of it. Part of `State`, made at the operation's first use of it (see
    /// `State.run`), and like the rest of `State` read and changed only under the operation's lock:
    /// `State` is never copied, so this reference is never shared.
    /// - Threading: reached only inside `state.withLock`, from any thread: the operation's lock owns it.
    final class Run {
        /// The request of the transfer under way (after a redirect, the redirected one); `nil` for the
        /// request as given (see `State.currentRequest`).
        var currentRequest: URLRequest?
        /// The last response head; `response` is built from it on first use (off the network thread).
        var head: ResponseHead?
        var response: URLResponse?
        var error: Error?
        var responseData: Data?
        /// The metrics of the last transfer that ended with some.
        var metrics: TransferMetrics?
        /// The transfer on (or last on) the network thread.
        var transfer: Transfer?
        /// The HTTP cache's part in the run under way (or the last one).
        var cache: CacheRun?
        /// What the run's success invalidates in the cache, for an unsafe request (which has no `cache`).
        var invalidation: CacheInvalidation?
        /// Whether the caller's `outputStream` was opened (by the first start).
        var outputStreamOpened = false
        /// Made at the first progress event after a block was set (see `State.progressReporter`).
        var uploadReporter: ProgressReporter?
        var downloadReporter: ProgressReporter?
        /// Attempts made so far (0 before the first starts).
        var attempts = 0
        /// Body bytes the last transfer delivered to its sink (for monitors, whatever the sink).
        var bodyBytesDelivered: Int64 = 0
        /// When (`monotonicNow()`) the operation handed its first transfer over; `nil` before.
        var startedAt: UInt64?
        /// Whether the handlers of the run's end began (a wait from inside them could never end).
        var handlersRunning = false
        /// The operation's span, from its first start to its finish, when a tracer is bootstrapped.
        var trace: OperationTrace?
        /// Whether a start or resume set out to make the span (`prepareTrace(for:)`): only one does;
        /// `traceBeingMade` is signalled once it is installed, for another event that would start a
        /// transfer meanwhile (it waits, outside the lock, rather than send a request without its fields).
        var traceClaimed = false
        var traceBeingMade: OneTimeSignal?
        /// Signalled when the pause under way settles (archiving waits for the kept bytes): made by the
        /// first archiver that waits, taken by the transfer's end, which signals it once the lock is released.
        var pauseSettlement: OneTimeSignal?
        /// The run's waits for its `RequestInterceptor`; `nil` without one.
        var interception: Interception?
    }
}

extension URLConnectionOperation {
    /// One setting of the operation's configuration.
    subscript<Value>(setting key: WritableKeyPath<OperationConfiguration.Settings, Value>) -> Value {
        get { state.withLock { $0.configuration[dynamicMember: key] } }
        set { state.withLock { $0.configuration[dynamicMember: key] = newValue } }
    }

    /// Replaces the whole configuration (the manager's settings for a new operation, or a copy's).
    func apply(_ configuration: OperationConfiguration) {
        state.withLock { $0.configuration = configuration }
    }

    /// The security policy's snapshot for a transfer about to be made, taken before the operation's
    /// lock is (the policy has a lock of its own). `nil` for the default policy.
    func securitySnapshot() -> SecurityPolicy.Snapshot? {
        state.withLock { $0.configuration.securityPolicy }?.snapshot
    }

    /// When (`monotonicNow()`) the operation handed its first transfer over, before any byte of it was
    /// sent; `nil` before it started. Monitors measure durations from it.
    var startedAt: UInt64? { state.withLock { $0.run.startedAt } }
}

// MARK: - Carrying out the lifecycle's actions

extension URLConnectionOperation {
    /// An action of the lifecycle with what carrying it out needs, taken under the lock in the same
    /// acquisition as the event that produced it.
    enum Step {
        /// Hand `transfer` to the network thread; `stream` is the caller's output stream to open first
        /// (the first start only), `observers` are told of the start.
        case startTransfer(Transfer, request: URLRequest, stream: OutputStream?, observers: OperationObservers?)
        /// The run was answered without the network: tell `observers` of the start, then send `answer`
        /// to the delivery queue, where it ends the run (`runAnswered(_:batch:)`).
        case deliverAnswer(TransferOutcome, observers: OperationObservers?)
        /// Ask the network thread to stop `transfer`, dropping its bytes.
        case cancelTransfer(Transfer)
        /// Ask the network thread to stop `transfer` (if the run has one), keeping its bytes; announce the pause.
        case pauseTransfer(Transfer?)
        /// The outcome is stored: run the handlers on `queue` inside `group`, then finish.
        case end(queue: DispatchQueue, group: DispatchGroup)
        /// Readiness changed.
        case readinessChanged
        /// Turn finished: tell `observers`, then run `completion` on `queue` inside `group`.
        case finish(completion: (@Sendable () -> Void)?, queue: DispatchQueue, group: DispatchGroup,
                    observers: OperationObservers?)
        /// Ask the interceptor (`startInterception`), after telling `observers` of the start when `announcesStart`.
        indirect case intercept(InterceptorWork, RequestInterceptor, generation: UInt64, observers: OperationObservers?,
                                announcesStart: Bool)
        /// Hand `transfer`, sending an adapted request, to the network thread (`stream` as for `startTransfer`).
        indirect case sendTransfer(Transfer, request: URLRequest, stream: OutputStream?)
        /// Cancel the interceptor's task, then carry out `then`.
        indirect case abandonInterception(Task<Void, Never>?, then: Step)
    }

    /// Applies `event` to the lifecycle and does the part of its action that belongs under the lock;
    /// returns what is left to do outside it (`nil`: nothing). Call inside `state.withLock`.
    /// - Parameters:
    ///   - security: the policy's snapshot (see `securitySnapshot()`), for an event that may start a transfer.
    ///   - cache: the cache's decision (see `cacheLookup(security:for:)`), for an event that may start a run from nothing.
    ///   - ending: how the run ended, for `transferEnded`: its transfer's outcome, or (without a
    ///     transfer) the answer it got without the network.
    func advance(_ state: inout State, security: SecurityPolicy.Snapshot? = nil, cache: CacheLookup? = nil,
                 ending: (outcome: TransferOutcome, transfer: Transfer?)? = nil,
                 _ event: (inout OperationState) -> OperationState.Action?) -> Step? {
        guard let action = event(&state.lifecycle) else { return nil }
        // The two settings the end needs, read in place: copying the whole configuration retains and
        // releases every block and object in it.
        let queue = state.configuration.effectiveCompletionQueue, group = state.configuration.effectiveCompletionGroup
        switch action {
        case .startTransfer(let kept):
            let answer = beginRun(in: &state, continuing: kept, cache: cache)
            if answer == nil, let interceptor = state.configuration.interceptor {
                // The interceptor adapts the request as it would be sent, the cache's fields on it.
                let unadapted = URLConnectionOperation.requestWithConditionalFields(in: state)
                return beginInterception(&state, interceptor, request: unadapted, kept: kept)
            }
            let stream = state.run.outputStreamOpened ? nil : state.outputStream
            if stream != nil { state.run.outputStreamOpened = true }
            if state.run.startedAt == nil { state.run.startedAt = monotonicNow() }
            state.run.attempts = max(state.run.attempts, 1)
            // Answered without the network: no transfer. The machine hears of it in this acquisition of
            // the lock, so a cancel or pause from here on meets a run without one.
            if let answer {
                state.run.transfer = nil
                return advance(&state) { $0.answeredWithoutNetwork(answer) }
            }
            let transfer = makeTransfer(&state, sending: state.request, kept: kept, security: security,
                                        conditionalFields: state.run.cache?.machine.addedFields ?? [])
            return .startTransfer(transfer, request: state.request, stream: stream, observers: state.observers)
        case .deliverAnswer(let answer):
            return .deliverAnswer(answer, observers: state.observers)
        case .cancelTransfer:
            guard let transfer = state.run.transfer else { return nil }
            transfer.requestCancel()   // from now on no request of it starts
            return .cancelTransfer(transfer)
        case .pauseTransfer:
            return .pauseTransfer(state.run.transfer)
        case .completeCancelled:
            state.recordCancel()
            state.run.transfer = nil
            return .end(queue: queue, group: group)
        case .deliver(let cancelled):
            if let ending { state.record(cancelled ? .cancelled : ending.outcome, of: ending.transfer) }
            // The outcome is stored: the transfer (its decoder's buffers, trust store, network thread)
            // goes now, not with the operation, which apps keep long after it finished.
            state.run.transfer = nil
            return .end(queue: queue, group: group)
        case .readinessChanged:
            return .readinessChanged
        case .finish:
            // Every block is released here, so an object that its own operation's block captured is
            // freed once the operation finished (AFN broke cycles this way).
            state.configuration.releaseBlocks()
            state.run.uploadReporter = nil
            state.run.downloadReporter = nil
            let completion = state.completionBlock
            state.completionBlock = nil
            return .finish(completion: completion, queue: queue, group: group, observers: state.observers)
        case .intercept:
            return interceptStep(&state)
        case .sendAdapted(let kept):
            return sendAdaptedStep(&state, kept: kept, security: security)
        case .cancelInterception:
            let task = abandonInterception(&state)
            state.recordCancel()
            return .abandonInterception(task, then: .end(queue: queue, group: group))
        case .pauseInterception:
            return .abandonInterception(abandonInterception(&state), then: .pauseTransfer(nil))
        }
    }

    /// The run's transfer of `request`, kept in the run. Every request it sends (attempts, redirects)
    /// starts from this one, so the span's fields go on it here. Call inside `state.withLock`.
    /// `conditionalFields`: a revalidation's, which the transfer sends with `request` (`Transfer.conditionalFields`).
    func makeTransfer(_ state: inout State, sending request: URLRequest, kept: KeptDownload?,
                      security: SecurityPolicy.Snapshot?, attempt: Int = 1, retriesThroughOwner: Bool = false,
                      conditionalFields: [(name: String, value: String)] = []) -> Transfer {
        var sent = request
        state.applyTraceFields(to: &sent)
        let transfer = Transfer(request: sent, conditionalFields: conditionalFields,
                                outputStream: state.outputStream, resumeFrom: kept?.point,
                                initialBody: kept?.bytes ?? Data(), security: security,
                                clientCertificate: state.configuration.clientCertificate,
                                maximumBodySize: state.configuration.maximumResponseSize,
                                retryPolicy: state.configuration.retryPolicy, proxy: state.configuration.proxy,
                                unixSocketPath: state.configuration.unixSocketPath, attempt: attempt,
                                retriesThroughOwner: retriesThroughOwner, delegate: self)
        state.run.transfer = transfer
        return transfer
    }

    /// Carries out what `advance` left to do, outside the lock. `batch` gathers completion-queue work
    /// when the step comes from a transfer's end on the delivery queue.
    func perform(_ step: consuming Step?, batch: CompletionBatch? = nil) {
        guard let step else { return }
        switch step {
        case .startTransfer(let transfer, let request, let stream, let observers):
            // An output stream that will not open ends the transfer as the network thread takes it in,
            // so that a pause or cancel already on its way meets it there.
            if let failure = streamOutcome(for: request, opening: stream) { transfer.endOnArrival(failure) }
            announceStart(to: observers)
            NetworkThread.shared.submit(.add(transfer))
        case .deliverAnswer(let answer, let observers):
            announceStart(to: observers)
            // Straight to the delivery queue, where a transfer's end goes: the network thread never
            // hears of the run. A cancel or pause made meanwhile was decided under the lock.
            CallbackQueues.delivery.async { [self] in
                let batch = CompletionBatch()
                runAnswered(answer, batch: batch)
                batch.send()
            }
        case .cancelTransfer(let transfer):
            NetworkThread.shared.submit(.cancel(transfer))
        case .pauseTransfer(let transfer):
            if let transfer { NetworkThread.shared.submit(.pause(transfer)) }
            post(.operationDidFinish)
        case .end(let queue, let group):
            transferDidEnd(on: queue, group: group, batch: batch)
        case .readinessChanged:
            willChangeValue(forKey: "isReady")
            didChangeValue(forKey: "isReady")
        case .finish(let completion, let queue, let group, let observers):
            // Only "isFinished" is announced: corelibs has no KVO, and its handler for "isExecuting"
            // acts only on a change *to* executing (corelibs' Operation.observeValue).
            willChangeValue(forKey: "isFinished")
            didChangeValue(forKey: "isFinished")
            observers?.operationDidFinish()   // resumes `value()` waiters
            post(.operationDidFinish)
            CallbackWork.shared.changed()   // a handler waiting for this operation on the callback queue
            if let completion { CallbackQueues.async(on: queue, group: group, completion) }
        case .intercept(let work, let interceptor, let generation, let observers, let announcesStart):
            if announcesStart { announceStart(to: observers) }
            startInterception(work, interceptor, generation: generation)
        case .sendTransfer(let transfer, let request, let stream):
            if let failure = streamOutcome(for: request, opening: stream) { transfer.endOnArrival(failure) }
            NetworkThread.shared.submit(.add(transfer))
        case .abandonInterception(let task, let then):
            task?.cancel()
            perform(then, batch: batch)
        }
    }

    /// Tells of a run's start (KVO, monitors, `operationDidStart`) before anything the run causes is
    /// queued: on the queues that later carry its finish, so the start always precedes the finish.
    private func announceStart(to observers: OperationObservers?) {
        willChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isExecuting")
        observers?.transferDidStart(self)
        CallbackWork.shared.async(group: nil) { [self] in
            NotificationCenter.default.post(name: .operationDidStart, object: self)
        }
    }

    /// Begins a start or a continuation of `kept`, resetting the outcome of an earlier run: returns the
    /// answer when the cache ends the run without the network. Call inside `state.withLock`.
    private func beginRun(in state: inout State, continuing kept: KeptDownload?, cache: CacheLookup?) -> TransferOutcome? {
        state.run.currentRequest = nil   // the request as given, until a redirect
        // A run's outcome belongs to that run: a restored finished operation runs again from nothing.
        state.run.error = nil
        if kept == nil {
            state.run.head = nil
            state.run.response = nil
            state.run.responseData = nil
            state.run.metrics = nil
        }
        return URLConnectionOperation.beginCacheRun(in: &state, continuing: kept != nil, lookup: cache)
    }
}
