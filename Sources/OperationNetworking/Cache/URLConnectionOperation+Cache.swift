import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP cache in the operation's life (NSURLConnection's caching, on RFC 9111): before a run,
/// `CacheState` decides from what `urlCache` holds (answer, revalidate, load or fail); after it, what
/// is delivered, stored and dropped.
/// The storage is read and written here, outside the operation's lock: at the start on the caller's
/// thread, at the end on the processing queue, before the handlers.
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
        /// `nil` when caching is off: the run keeps no cache part, and its metrics say not consulted.
        let run: CacheRun?
        let decision: CacheState.Decision
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
        let found = state.withLock { state -> (policy: URLRequest.CachePolicy, input: LookupInput?)? in
            guard state.lifecycle.startsRunFromNothing(event), state.request.url != nil else { return nil }
            guard !state.configuration.urlCache.isOff else { return (state.request.cachePolicy, nil) }
            let input = LookupInput(request: state.request, setting: state.configuration.urlCache,
                                    streams: state.outputStream != nil,
                                    clientCertificate: state.configuration.clientCertificate,
                                    maximumBodySize: state.configuration.maximumResponseSize,
                                    retryPolicy: state.configuration.retryPolicy, proxy: state.configuration.proxy,
                                    decidesStores: state.configuration.cacheBlock != nil,
                                    overUnixSocket: state.configuration.unixSocketPath?.isEmpty == false
                                        || UnixSocketRoute.isUnixURL(state.request.url))
            return (state.request.cachePolicy, input)
        }
        guard let (policy, read) = found else { return nil }
        // Caching off: nothing to read, store or invalidate, so nothing more of the request is read.
        guard let input = read else { return CacheLookup(run: nil, decision: CacheState.decisionWithoutCache(policy: policy)) }
        let (request, setting, streams) = (input.request, input.setting, input.streams)
        var machine = CacheState()
        let now = Date()
        let configured = setting.cache
        // The first run to meet a cache whose files are not used says why (`LoggingEventMonitor`).
        let warnings = configured as? CacheFileWarnings
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
        guard var asked = CacheRequest(request) else { return nil }
        asked.trust = CacheTrust.identity(of: security, clientCertificate: input.clientCertificate)
        asked.maximumBodySize = input.maximumBodySize
        asked.mayRevalidateInBackground = !input.decidesStores
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
            return nil
        }
        state.run.cache = lookup?.run
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

    // MARK: - After the run

    /// What the end of a run reads of the operation, under its lock, to tell the cache what it received.
    private struct EndInput {
        let cache: URLCache?
        let head: ResponseHead
        let body: Data?
        /// The last hop's request, read only after a redirect (otherwise it is the run's own).
        let finalRequest: URLRequest?
        let requestTime: Date
    }

    /// What the cache's part of the end carries out after the lock is released: the plan of its
    /// `transferEnded` event, on this storage, the cache response block deciding what is stored.
    private struct CacheEnding {
        let plan: CacheState.Plan
        let storage: CacheStorage?
        let block: CacheResponseBlock?
        /// The run's `requestTime`, which a store's report names it by.
        let run: Date
        let withoutNetwork: Bool
    }

    /// Whether the end of the run needs a queue of its own, off the one serial delivery queue: when it
    /// may write a storage that writes files in the call (corelibs' `URLCache`, a subclass of the
    /// app's), or run the app's cache response block. The library's `SQLiteURLCache` stores in memory
    /// and writes its files later, in batches, on its own queue: its end is settled where it is.
    /// (A cache without capacity holds nothing to write or drop.)
    var cacheEndNeedsItsOwnQueue: Bool {
        // The run's parts are read in place: copying the run out copies the stored response it holds.
        let found = state.withLock { state -> (URLCache, inMemoryFirst: Bool, hasBlock: Bool)? in
            guard state.run.error == nil, state.run.cache?.machine.mayWriteStorage == true,
                  let cache = state.run.cache?.urlCache else { return nil }
            return (cache, state.run.cache?.storage?.storesInMemoryFirst == true, state.configuration.cacheBlock != nil)
        }
        guard let (cache, inMemoryFirst, hasBlock) = found, hasBlock || !inMemoryFirst else { return false }
        return cache.memoryCapacity > 0 || cache.diskCapacity > 0
    }

    /// The cache's part of the end, before the handlers: a `304` becomes the stored response it
    /// validated, what RFC 9111 allows is stored (the cache response block deciding last), what an
    /// unsafe request changed is dropped, and the metrics say what happened. A hit or a validated
    /// response reports its body to the download progress block once.
    ///
    /// The run's `CacheState` stays in the operation's state and its events run there, under the lock:
    /// what they return is carried out here after the lock is released (the storage, the app's block).
    func settleCache() {
        guard case .withStorage(let input) = beginSettling() else { return }
        // What was received, made into the cache's terms outside the lock: the cache's capacities are
        // open properties of `URLCache` (the library's own takes a lock of its own).
        let received = input.map(URLConnectionOperation.received(from:))
        guard let (ending, settled) = state.withLock({ state -> (CacheEnding, settled: Int??)? in
            guard let withoutNetwork = state.run.cache?.machine.endedWithoutNetwork,
                  let plan = state.run.cache?.machine.transferEnded(with: received),
                  let requestTime = state.run.cache?.requestTime else { return nil }
            let ending = CacheEnding(plan: plan, storage: state.run.cache?.storage, block: state.configuration.cacheBlock,
                                     run: requestTime, withoutNetwork: withoutNetwork)
            // A plan that stores nothing (a hit, a miss not stored, a POST's invalidation) ends the run
            // here, in the same acquisition; its removals need no lock.
            guard plan.store == nil, plan.repeated == nil else { return (ending, nil) }
            return (ending, .some(URLConnectionOperation.endCacheRun(in: &state, ending, stored: false, pending: false)))
        }) else { return }
        let deliveredBytes: Int?
        if let settled {
            if let storage = ending.storage {
                for url in ending.plan.remove { storage.removeStoredResponse(for: url) }
            }
            deliveredBytes = settled
        } else {
            let (stored, pending) = carryOut(ending)
            deliveredBytes = state.withLock { state -> Int? in
                guard state.run.cache?.requestTime == ending.run else { return nil }   // a later run's state is left alone
                return URLConnectionOperation.endCacheRun(in: &state, ending, stored: stored, pending: pending)
            }
        }
        if let count = deliveredBytes, count > 0 {
            let reporter = state.withLock { $0.progressReporter(download: true, of: self) }
            reporter?.record(bytes: count, total: Int64(count), expected: Int64(count))
        }
    }

    /// Ends the run's cache part in `state` once its plan was carried out (`stored`, `pending`: what the
    /// store did): the metrics say what happened, and a response the plan delivers replaces the one
    /// received. Returns the count of body bytes delivered from the cache, for the progress block.
    private static func endCacheRun(in state: inout State, _ ending: CacheEnding, stored: Bool, pending: Bool) -> Int? {
        state.run.cache?.machine.storeEnded(stored: stored, pending: pending)
        let status = state.run.cache?.machine.status ?? .notConsulted
        // A run that never reached the network has no transfer metrics (those left are an earlier run's).
        state.run.metrics = ending.withoutNetwork ? .withoutNetwork(cacheStatus: status)
            : state.run.metrics?.with(cacheStatus: status)
        if let delivered = ending.plan.deliver {
            // Foundation's response is built from the head only if someone reads it.
            state.run.head = delivered.response
            state.run.response = nil
            state.run.responseData = delivered.body
            return delivered.body.count
        }
        return status == .hit ? state.run.responseData?.count : nil
    }

    /// Carries out the plan of the run's end, with no lock held: drops what it says, and stores what the
    /// cache response block approves. Returns whether anything was stored, and whether a store is
    /// written later (the library's store writes its file in batches and reports each store written).
    private func carryOut(_ ending: CacheEnding) -> (stored: Bool, pending: Bool) {
        guard let storage = ending.storage else { return (false, false) }
        for url in ending.plan.remove { storage.removeStoredResponse(for: url) }
        // Nothing to keep or store (a POST, a `no-store` response): no report, so no weak reference to
        // the operation is made (its side table costs more than the rest of such an end).
        guard ending.plan.repeated != nil || ending.plan.store != nil else { return (false, false) }
        let run = ending.run
        // A response that only repeats the entry the run found keeps it, when no block decides and the
        // storage still holds it: nothing is built or written, and no report is made unless the entry
        // waits for its batch (a weak reference gives the operation a side table, which makes each
        // later retain and release of it slower).
        if let repeated = ending.plan.repeated, ending.block == nil,
           let outcome = storage.keepRepeated(at: repeated.place, makeReport: { writeReport(run: run) }) {
            return (outcome != .notStored, outcome == .pending)
        }
        let report = writeReport(run: run)
        guard let (candidate, keys) = ending.plan.storeCandidate, let approved = approved(candidate, by: ending.block) else {
            return (false, false)
        }
        var (stored, pending) = (false, false)
        for key in keys {
            // The report may come before the run's end took the store (`CacheState` keeps it then).
            let outcome = storage.store(approved, forURL: key, written: report)
            pending = pending || outcome == .pending
            stored = stored || outcome != .notStored
        }
        return (stored, pending)
    }

    /// What a store of the run that began at `run` reports to: the operation, if it is still there.
    private func writeReport(run: Date) -> SQLiteURLCache.WriteReport {
        { [weak self] ok in
            if ok { self?.cacheStoreWritten(run: run) }
        }
    }

    /// The store of the run that began at `run` (its `requestTime`) was written: its metrics now say
    /// `.stored`, after the handlers most often (once; a later run's state is left alone).
    private func cacheStoreWritten(run: Date) {
        state.withLock { state in
            guard state.run.cache?.requestTime == run, state.run.cache?.machine.storeWritten() == true,
                  let status = state.run.cache?.machine.status else { return }
            state.run.metrics = state.run.metrics?.with(cacheStatus: status)
        }
    }

    /// How the end of a run begins (`beginSettling`).
    private enum SettlingStart {
        /// Nothing more to do: the run used no cache, or no storage.
        case settled
        /// The run has a storage; what it received, when its end may store or invalidate.
        case withStorage(EndInput?)
    }

    /// The first step of the end, in one acquisition of the lock. A run that uses no cache (none set,
    /// or a continued download) is settled here: with nothing to store, drop or deliver, only its status
    /// goes into the metrics. For a run with a storage, takes what it received whole when its end may
    /// store or invalidate (nothing after a failure or a cancel, nor for a run that stores nothing:
    /// Foundation's `HTTPURLResponse`, which the serializers' raw-head validation spares a response
    /// nobody reads, is not built for the cache either).
    private func beginSettling() -> SettlingStart {
        state.withLock { state in
            // The run is changed in place: it is a large value, and copying it out and back costs more
            // than the rest of this.
            guard state.run.cache != nil else { return .settled }
            if state.run.cache?.storage == nil, let ended = state.run.cache?.machine.endWithoutStorage() {
                state.run.metrics = ended.withoutNetwork ? .withoutNetwork(cacheStatus: ended.status)
                    : state.run.metrics?.with(cacheStatus: ended.status)
                return .settled
            }
            guard state.run.cache?.machine.mayWriteStorage == true, let requestTime = state.run.cache?.requestTime,
                  let head = state.run.head, state.run.error == nil, !state.lifecycle.isCancelled else {
                return .withStorage(nil)
            }
            return .withStorage(EndInput(cache: state.run.cache?.urlCache, head: head,
                                         body: state.outputStream == nil ? state.run.responseData : nil,
                                         finalRequest: state.run.cache?.machine.wasRedirected == true
                                            ? state.currentRequest : nil,
                                         requestTime: requestTime))
        }
    }

    /// What was received, as the cache takes it: its fields by lowercased name, whether its body fits
    /// the cache's capacities, and the last hop's request after a redirect.
    private static func received(from input: EndInput) -> CacheState.Received {
        let fits = input.cache.map {
            CacheStorage.takes(bodyOfSize: input.body?.count ?? 0, memoryCapacity: $0.memoryCapacity,
                               diskCapacity: $0.diskCapacity)
        } ?? false
        return CacheState.Received(head: input.head, body: input.body,
                                   finalRequest: input.finalRequest.flatMap(CacheRequest.init(_:)), fitsCache: fits,
                                   requestTime: input.requestTime, responseTime: Date())
    }

    /// `stored` as the cache response block changes it, or `nil` when the block refuses it (returns
    /// `nil`, a response that is not HTTP, or a `.notAllowed` storage policy). Without a block, `stored`.
    private func approved(_ stored: StoredResponse, by block: CacheResponseBlock?) -> StoredResponse? {
        guard let block else { return stored }
        guard let response = stored.response else { return nil }
        let proposed = CachedURLResponse(response: response, data: stored.body, userInfo: nil, storagePolicy: .allowed)
        guard let decided = block(self, proposed), decided.storagePolicy != .notAllowed,
              let chosen = decided.response as? HTTPURLResponse else { return nil }
        return StoredResponse(response: chosen, body: decided.data, varyingRequestHeaders: stored.varyingRequestHeaders,
                              requestTime: stored.requestTime, responseTime: stored.responseTime, trust: stored.trust)
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
