import Dispatch
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every mutable field of a `URLConnectionOperation`, in one value behind the operation's one lock.
/// - Threading: owned by the operation; read and written only with `URLConnectionOperation.lock` held.
struct MutableState {
    /// Where the operation is in its life (the state machine).
    var lifecycle = OperationState()
    /// What the caller configured.
    var configuration = OperationConfiguration()
    /// The request as given (and as changed by `inputStream`).
    var request: URLRequest
    /// The request of the transfer under way (after a redirect, the redirected one).
    var currentRequest: URLRequest
    /// The last response head; `response` is built from it on first use (off the network thread).
    var head: ResponseHead?
    var response: URLResponse?
    var error: Error?
    var responseData: Data?
    /// The last transfer that ended with metrics. They are read from it, not copied out: the network
    /// thread writes nothing to a transfer once its end reached the operation, and this is usually
    /// `transfer` itself, so it holds nothing more (a box copied into per request cost about 600
    /// instructions; bench/README.md, round 10).
    var metricsSource: Transfer?
    var metrics: TransferMetrics? { metricsSource?.metrics }
    /// The transfer on (or last on) the network thread.
    var transfer: Transfer?
    var outputStream: OutputStream?
    var outputStreamOpened = false
    var userInfo: [String: Any] = [:]
    /// Made at the first progress event after a block was set (see `progressReporter`).
    var uploadReporter: ProgressReporter?
    var downloadReporter: ProgressReporter?
    /// Attempts made so far (0 before the first starts).
    var attempts = 0
    /// Body bytes the last transfer delivered to its sink (for monitors, whatever the sink).
    var bodyBytesDelivered: Int64 = 0
    /// Event monitors and `value()` waiters, made on first use (see `URLConnectionOperation.observers`).
    var observers: OperationObservers?
    /// Run once, on the completion queue, just before the operation turns finished (batches use it).
    var finishHooks: [@Sendable () -> Void] = []
    /// The inherited `completionBlock`, kept here so that Foundation never runs it on a global queue.
    var completionBlock: (@Sendable () -> Void)?
    /// Signalled when a pause settled (archiving waits for the kept bytes); made on first use.
    var pauseSettled: NSCondition?

    /// Ends the run as cancelled: the cancel error, and no body (as AFNetworking).
    mutating func recordCancel() {
        error = TransportError.cancelled(url: request.url)
        responseData = nil
    }

    init(request: URLRequest) {
        self.request = request
        self.currentRequest = request
    }

    /// The operation's policy, the default made on first read.
    var securityPolicy: SecurityPolicy {
        mutating get {
            if let policy = configuration.securityPolicy { return policy }
            let policy = SecurityPolicy.default()
            configuration.securityPolicy = policy
            return policy
        }
        set { configuration.securityPolicy = newValue }
    }
}

extension URLConnectionOperation {
    /// One setting of the operation's configuration, under the lock.
    subscript<Value>(setting key: WritableKeyPath<OperationConfiguration.Settings, Value>) -> Value {
        get { lock.withLock { mutable.configuration[dynamicMember: key] } }
        set { lock.withLock { mutable.configuration[dynamicMember: key] = newValue } }
    }

    /// Replaces the whole configuration (the manager's settings for a new operation, or a copy's).
    func apply(_ configuration: OperationConfiguration) {
        lock.withLock { mutable.configuration = configuration }
        if configuration.uploadProgressBlock != nil || configuration.downloadProgressBlock != nil {
            progressBlockEverSet.store(true, ordering: .releasing)
        }
    }

    /// The reporter for the next progress event: made when a block is set and none exists yet, so a
    /// block set while the transfer runs is called from the next event on. `nil` without a block.
    /// Call with `lock` held.
    func progressReporter(download: Bool) -> ProgressReporter? {
        if let existing = download ? mutable.downloadReporter : mutable.uploadReporter { return existing }
        let hasBlock = download ? mutable.configuration.downloadProgressBlock != nil
            : mutable.configuration.uploadProgressBlock != nil
        guard hasBlock else { return nil }
        // The reporter reads the block when it delivers, so replacing or removing it takes effect at once.
        // Weak: the operation owns its reporter, and a paused operation that is never finished must
        // still be freed.
        let reporter = ProgressReporter(queue: mutable.configuration.effectiveCompletionQueue) { [weak self] in
            guard let self else { return nil }
            return lock.withLock {
                download ? mutable.configuration.downloadProgressBlock : mutable.configuration.uploadProgressBlock
            }
        }
        if download { mutable.downloadReporter = reporter } else { mutable.uploadReporter = reporter }
        return reporter
    }

    /// The condition archiving waits on for a pause to settle (made on first use).
    var pauseSettled: NSCondition {
        lock.withLock {
            if let condition = mutable.pauseSettled { return condition }
            let condition = NSCondition()
            mutable.pauseSettled = condition
            return condition
        }
    }
}
