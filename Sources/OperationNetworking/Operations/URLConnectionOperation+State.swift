import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a caller configures on an operation, as one value: `copy(with:)` and the manager hand
/// it over whole, so a setting added here cannot be forgotten by either.
/// - Threading: a value; the operation keeps it in its `MutableState`, behind its lock.
struct OperationConfiguration {
    var shouldUseCredentialStorage = true
    var credential: URLCredential?
    /// The policy set by the caller; `nil` means `SecurityPolicy.default()`, made on first read (most
    /// operations never read theirs, and the default's snapshot is a constant).
    var securityPolicy: SecurityPolicy?
    var clientCertificate: ClientCertificate?
    var maximumResponseSize: Int64?
    var retryPolicy = RetryPolicy.none
    var proxy = ProxySetting.environment
    var proxyCredential: URLCredential?
    var completionQueue: DispatchQueue?
    var completionGroup: DispatchGroup?
    var uploadProgressBlock: URLConnectionOperation.UploadProgressBlock?
    var downloadProgressBlock: URLConnectionOperation.DownloadProgressBlock?
    var redirectBlock: URLConnectionOperation.RedirectResponseBlock?
    var challengeBlock: URLConnectionOperation.AuthenticationChallengeBlock?
    var cacheBlock: URLConnectionOperation.CacheResponseBlock?

    /// The same configuration for another operation: the security policy is copied (it is a mutable
    /// class), everything else shared.
    func copied() -> OperationConfiguration {
        var copy = self
        copy.securityPolicy = securityPolicy.map { ($0.copy() as? SecurityPolicy) ?? $0 }
        return copy
    }

    /// Drops every block (an operation does when it finishes, to break the cycles blocks make).
    mutating func releaseBlocks() {
        uploadProgressBlock = nil
        downloadProgressBlock = nil
        redirectBlock = nil
        challengeBlock = nil
        cacheBlock = nil
    }
}

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
    var metrics: TransferMetrics?
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
    /// Run once, on the completion queue, just before the operation turns finished (batches use it).
    var finishHooks: [@Sendable () -> Void] = []
    /// The inherited `completionBlock`, kept here so that Foundation never runs it on a global queue.
    var completionBlock: (@Sendable () -> Void)?
    /// Signalled when a pause settled (archiving waits for the kept bytes); made on first use.
    var pauseSettled: NSCondition?

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

    /// The queue progress blocks and handlers run on, the default applied.
    var effectiveCompletionQueue: DispatchQueue { configuration.completionQueue ?? CallbackQueues.callback }
}

extension URLConnectionOperation {
    /// The reporter for the next progress event: made when a block is set and none exists yet, so a
    /// block set while the transfer runs is called from the next event on. `nil` without a block.
    /// Call with `lock` held.
    func progressReporter(download: Bool) -> ProgressReporter? {
        if let existing = download ? mutable.downloadReporter : mutable.uploadReporter { return existing }
        let hasBlock = download ? mutable.configuration.downloadProgressBlock != nil
            : mutable.configuration.uploadProgressBlock != nil
        guard hasBlock else { return nil }
        // The reporter reads the block when it delivers, so replacing or removing it takes effect at once.
        let reporter = ProgressReporter(queue: mutable.effectiveCompletionQueue) { [self] in
            lock.withLock {
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
