import Dispatch
import Foundation
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
    /// The last response head and the metrics, boxed: a queued operation has neither, and they would
    /// make every operation a couple of hundred bytes larger.
    private var facts: TransferFacts?
    /// The last response head; `response` is built from it on first use (off the network thread).
    var head: ResponseHead? {
        get { facts?.head }
        set { changeFacts(to: newValue) { $0.head = newValue } }
    }
    var response: URLResponse?
    var error: Error?
    var responseData: Data?
    var metrics: TransferMetrics? {
        get { facts?.metrics }
        set { changeFacts(to: newValue) { $0.metrics = newValue } }
    }
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

    /// Makes the facts box on the first value set (setting `nil` on no box makes none).
    private mutating func changeFacts<Value>(to value: Value?, _ change: (TransferFacts) -> Void) {
        if value == nil && facts == nil { return }
        let box = facts ?? TransferFacts()
        change(box)
        facts = box
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

/// A transfer's response head and metrics, out of line (see `MutableState.head`).
/// - Threading: owned by one `MutableState`, so guarded by its operation's lock.
final class TransferFacts {
    @exclusivity(unchecked) var head: ResponseHead?        // guarded by the operation's lock
    @exclusivity(unchecked) var metrics: TransferMetrics?  // guarded by the operation's lock
}

extension URLConnectionOperation {
    /// One setting of the operation's configuration, under the lock.
    subscript<Value>(setting key: WritableKeyPath<OperationConfiguration.Settings, Value>) -> Value {
        get { lock.withLock { mutable.configuration[dynamicMember: key] } }
        set { lock.withLock { mutable.configuration[dynamicMember: key] = newValue } }
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
