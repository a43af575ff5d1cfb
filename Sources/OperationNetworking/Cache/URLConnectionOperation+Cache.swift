import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP cache in the operation's life (NSURLConnection's caching, on RFC 9111): before a run,
/// `CacheState` decides from what `urlCache` holds (answer, revalidate, load or fail); after it, what
/// is delivered, stored and dropped (`URLConnectionOperation+CacheEnd.swift`). An unsafe request's run
/// keeps only its `CacheInvalidation`.
/// The storage is read and written outside the operation's lock: at the start on the caller's thread,
/// at the end on the processing queue, before the handlers.
extension URLConnectionOperation {
    /// The cache's part in the run under way, kept in the operation's state.
    struct CacheRun {
        var machine: CacheState
        /// The cache and its stored responses; `nil` when the run uses none.
        let urlCache: URLCache?
        let storage: CacheStorage?
        /// When the request went out (RFC 9111 §4.2.3 `request_time`).
        let requestTime: Date
        /// Why the cache's files are not used, for the first run that met it (`LoggingEventMonitor` logs it).
        var fileWarning: String? = nil
        /// Why a batch of the cache's writes failed since the last run that asked (`LoggingEventMonitor`).
        var writeFailure: String? = nil
    }

    /// What the cache decided for a run about to start from nothing.
    struct CacheLookup {
        /// `nil` when caching is off or the request is unsafe: the run keeps no cache part, and its
        /// metrics say not consulted.
        var run: CacheRun? = nil
        /// What an unsafe request's success invalidates, when a cache is set.
        var invalidation: CacheInvalidation? = nil
        let decision: CacheState.Decision
    }

    /// What a lookup reads of the operation, under its lock.
    private enum LookupRead {
        /// Caching is off: only the request's policy counts (`.returnCacheDataDontLoad` fails).
        case off(URLRequest.CachePolicy)
        /// An unsafe request: the cache is not read, and its success invalidates (`nil`: nothing, over a
        /// Unix domain socket).
        case unsafe(CacheInvalidation?, URLRequest.CachePolicy)
        case consults(LookupInput)
    }

    // MARK: - Before the run

    /// What a lookup reads of the operation, under its lock.
    private struct LookupInput {
        let request: URLRequest
        let setting: CacheSetting
        let streams: Bool
        let clientCertificate: ClientCertificate?
        let maximumBodySize: Int64?
        let retryPolicy: RetryPolicy
        let proxy: ProxySetting
        /// Whether a cache response block is set: it decides what is stored, so nothing answers stale
        /// while a revalidation of the library's own would store without it.
        let decidesStores: Bool
        /// Whether the request goes over a Unix domain socket (see `unixSocketPath`).
        let overUnixSocket: Bool
    }

    /// The cache's decision for `event` (`start()` or `resume()`) when it starts a run from nothing,
    /// made before the operation's lock is taken for the event (the storage may read files); `nil` when
    /// the event will not start such a run (as `OperationState` answers: a continuation, a run under
    /// way, a cancelled or parked operation) or the request has no URL. `security` is the snapshot the
    /// run's transfer gets: a stored `https` response answers only the trust it gives (`CacheTrust`).
    func cacheLookup(security: SecurityPolicy.Snapshot?,
                     for event: (inout OperationState) -> OperationState.Action?) -> CacheLookup? {
        let found = state.withLock { state -> LookupRead? in
            guard state.lifecycle.startsRunFromNothing(event), state.request.url != nil else { return nil }
            guard !state.configuration.urlCache.isOff else { return .off(state.request.cachePolicy) }
            let overUnixSocket = state.configuration.unixSocketPath?.isEmpty == false
                || UnixSocketRoute.isUnixURL(state.request.url)
            if let invalidation = CacheInvalidation(state.request) {
                return .unsafe(overUnixSocket ? nil : invalidation, state.request.cachePolicy)
            }
            return .consults(LookupInput(request: state.request, setting: state.configuration.urlCache,
                                         streams: state.outputStream != nil,
                                         clientCertificate: state.configuration.clientCertificate,
                                         maximumBodySize: state.configuration.maximumResponseSize,
                                         retryPolicy: state.configuration.retryPolicy, proxy: state.configuration.proxy,
                                         decidesStores: state.configuration.cacheBlock != nil,
                                         overUnixSocket: overUnixSocket))
        }
        let input: LookupInput
        switch consume found {
        case nil:
            return nil
        case .off(let policy):
            // Caching off: nothing to read, store or invalidate, so nothing more of the request is read.
            return CacheLookup(decision: CacheState.decisionWithoutCache(policy: policy))
        case .unsafe(let invalidation, let policy):
            // Nothing to read or store: neither the cache nor the rest of the request is looked at now.
            return CacheLookup(invalidation: invalidation, decision: CacheState.decisionWithoutCache(policy: policy))
        case .consults(let read):
            input = read
        }
        let (request, setting, streams) = (input.request, input.setting, input.streams)
        var machine = CacheState()
        let now = Date()
        let configured = setting.cache
        // The first run to meet a cache whose files are not used says why (`LoggingEventMonitor`).
        let warnings: CacheFileWarnings? = configured.flatMap(SQLiteURLCache.library)
        let files = warnings?.takeFileState()
        let writeFailure = warnings?.takeWriteFailure()
        // A response over a Unix domain socket is never stored nor answered from storage: the key is the
        // URL, and `http://localhost/x` names the same key over every socket and over TCP.
        guard let cache = configured, files?.isRefused != true, !input.overUnixSocket else {
            // No cache, or one whose files are refused (it answers and keeps nothing): nothing to read,
            // store or invalidate, so the request's fields are not read.
            let decision = machine.bypass(policy: request.cachePolicy)
            return CacheLookup(run: CacheRun(machine: machine, urlCache: nil, storage: nil, requestTime: now,
                                             fileWarning: files?.warning, writeFailure: writeFailure),
                               decision: decision)
        }
        guard let asked = CacheRequest(request,
                                       trust: CacheTrust.identity(of: security, clientCertificate: input.clientCertificate),
                                       maximumBodySize: input.maximumBodySize,
                                       mayRevalidateInBackground: !input.decidesStores) else { return nil }
        let storage = CacheStorage(cache)
        let decision: CacheState.Decision
        if streams {
            // A body that goes to the caller's stream is neither stored nor served from the cache.
            decision = machine.bypass(asked)
        } else {
            let stored = asked.readsStoredResponses ? storage.storedResponse(for: request) : nil
            decision = machine.consult(asked, stored: stored, now: now)
        }
        if case .deliverStale(_, _, let revalidation) = decision {
            // Sent here, outside every lock, with the snapshot the run's own transfer gets (should the
            // event not start the run after all, the stale entry is refreshed all the same).
            revalidation.start(BackgroundRevalidation.Settings(
                request: request, security: security, clientCertificate: input.clientCertificate,
                maximumBodySize: input.maximumBodySize, retryPolicy: input.retryPolicy, proxy: input.proxy),
                               storage: storage)
        }
        return CacheLookup(run: CacheRun(machine: machine, urlCache: cache, storage: storage, requestTime: now,
                                         fileWarning: files?.warning, writeFailure: writeFailure),
                           decision: decision)
    }

    /// Why the cache's files were not used, when this operation's run was the first to meet it (a
    /// refused folder or file, or a folder that cannot be made); `nil` otherwise.
    var cacheFileWarning: String? {
        state.withLock { $0.run.cache?.fileWarning }
    }

    /// Why a batch of the cache's writes failed (its stores were lost) since the last operation that
    /// asked, when this operation's run was the first after it; `nil` otherwise.
    var cacheWriteFailure: String? {
        state.withLock { $0.run.cache?.writeFailure }
    }

    /// Whether the last run was answered by a stale stored response within its `stale-while-revalidate`
    /// window, a revalidation of the library's own then refreshing it (`LoggingEventMonitor` says so).
    var cacheAnsweredStale: Bool {
        state.withLock { $0.run.cache?.machine.answeredStale ?? false }
    }

    /// Puts the cache's part of a new run in `state`: returns the answer that ends the run without the
    /// network (and without a transfer), if the cache gives one. The request goes as the operation holds
    /// it: a revalidation's conditional fields stay in the run (`CacheState.addedFields`), and the
    /// transfer carries them, or the request an interceptor adapts (`requestWithConditionalFields`).
    /// Call inside `state.withLock`.
    static func beginCacheRun(in state: inout State, continuing: Bool, lookup: CacheLookup?) -> TransferOutcome? {
        guard !continuing else {
            // A resumed download is never served from, nor stitched into, a stored response.
            var machine = CacheState()
            machine.continueDownload()
            state.run.cache = CacheRun(machine: machine, urlCache: nil, storage: nil, requestTime: Date())
            state.run.invalidation = nil
            return nil
        }
        state.run.cache = lookup?.run
        state.run.invalidation = lookup?.invalidation
        switch lookup?.decision {
        case .deliver(let response, let body), .deliverStale(let response, let body, _):
            return .answeredFromCache(response, body)
        case .fail:
            return .failed(TransportError.make(.resourceUnavailable, "No cached response, and loading is not allowed.",
                                               url: state.request.url))
        case .revalidate, .load, nil:
            return nil
        }
    }

    /// The operation's request with the run's conditional fields set on it, in place of any of the same
    /// name: what an interceptor adapts (the request as it would be sent). Without an interceptor the
    /// transfer carries them instead (`Transfer.conditionalFields`), and the request is not copied. Call
    /// inside `state.withLock`.
    static func requestWithConditionalFields(in state: State) -> URLRequest {
        var request = state.request
        for field in state.existingRun?.cache?.machine.addedFields ?? [] { request.setValue(field.value, forHTTPHeaderField: field.name) }
        return request
    }

    /// A `304` arrived for the run's transfer: one the cache's own revalidation cannot use (about another
    /// response than the stored one, `CacheState.notModifiedArrived`) has the transfer send the request
    /// again without the fields the cache added. On the network thread; no code of the app's runs.
    func transfer(_ transfer: Transfer, resendsUnconditionallyAfter head: ResponseHead) -> [String]? {
        state.withLock { state in
            guard transfer === state.run.transfer else { return nil }
            return state.run.cache?.machine.notModifiedArrived(head)
        }
    }
}

/// Which URL cache an operation uses: the shared one (read when it is asked for, so a program that
/// replaces `URLCache.shared` before its operations start is followed), one of the caller's, or none.
/// - Threading: an immutable value.
enum CacheSetting: Sendable {
    case shared
    case custom(URLCache)
    case off

    /// The setting for a value of `urlCache`: `nil` turns caching off.
    init(_ cache: URLCache?) {
        self = cache.map { .custom($0) } ?? .off
    }

    /// The cache, `nil` when caching is off. Call it outside any lock of the library: `URLCache.shared`
    /// takes a lock of Foundation's.
    var cache: URLCache? {
        switch self {
        case .shared: return CacheStorage.defaultShared()
        case .custom(let cache): return cache
        case .off: return nil
        }
    }

    /// Whether caching is off (what a manager's archive records).
    var isOff: Bool {
        if case .off = self { return true }
        return false
    }
}
