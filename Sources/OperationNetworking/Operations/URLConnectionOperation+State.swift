import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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

        init(request: URLRequest) {
            self.request = request
        }

        /// The request of the transfer under way (after a redirect, the redirected one); before the
        /// first start, the request as given.
        var currentRequest: URLRequest { existingRun?.currentRequest ?? request }

        /// Ends the run as cancelled: the cancel error, and no body (as AFNetworking).
        mutating func recordCancel() {
            run.error = TransportError.cancelled(url: request.url)
            run.responseData = nil
        }

        /// Stores how the operation's transfer ended.
        mutating func record(_ outcome: TransferOutcome, of transfer: Transfer) {
            switch outcome {
            case .completed:
                if outputStream == nil { run.responseData = State.keptBody(of: transfer) }
            case .completedWithError(let failure):
                if outputStream == nil { run.responseData = State.keptBody(of: transfer) }
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
        /// Signalled when a pause settled (archiving waits for the kept bytes); made on first use.
        var pauseSettled: NSCondition?
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

    /// The condition archiving waits on for a pause to settle (made on first use).
    var pauseSettled: NSCondition {
        state.withLock { state in
            if let condition = state.run.pauseSettled { return condition }
            let condition = NSCondition()
            state.run.pauseSettled = condition
            return condition
        }
    }

    /// When (`monotonicNow()`) the operation handed its first transfer over, before any byte of it was
    /// sent; `nil` before it started. Monitors measure durations from it.
    var startedAt: UInt64? { state.withLock { $0.run.startedAt } }
}

extension NSCondition {
    /// Wakes every waiter (taking the condition's lock around the broadcast, as it requires).
    func broadcastUnderLock() {
        lock()
        broadcast()
        unlock()
    }
}
