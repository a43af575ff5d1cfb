import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The end of a run's part in the HTTP cache (see `URLConnectionOperation+Cache.swift` for its start):
/// what is delivered, stored and dropped, on the processing queue, before the handlers.
extension URLConnectionOperation {

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
        let found = state.withLock { state -> EndWork? in
            guard state.run.error == nil else { return nil }
            if state.run.invalidation != nil { return .invalidates(state.configuration.urlCache) }
            guard state.run.cache?.machine.mayWriteStorage == true, let cache = state.run.cache?.urlCache else { return nil }
            return .settles(cache, inMemoryFirst: state.run.cache?.storage?.storesInMemoryFirst == true,
                            hasBlock: state.configuration.cacheBlock != nil)
        }
        switch found {
        case nil:
            return false
        case .invalidates(let setting):
            // An unsafe request's removals: in memory for the library's store, in the call for another.
            return setting.cache.map { !CacheStorage.storesInMemoryFirst($0) } ?? false
        case .settles(let cache, let inMemoryFirst, let hasBlock):
            guard hasBlock || !inMemoryFirst else { return false }
            return cache.memoryCapacity > 0 || cache.diskCapacity > 0
        }
    }

    /// What the end of a run may do to the storage (`cacheEndNeedsItsOwnQueue`).
    private enum EndWork {
        /// An unsafe request's success drops entries from the cache of this setting.
        case invalidates(CacheSetting)
        /// The cache's plan runs on `cache`: the library's own store changes memory only; a cache
        /// response block is the app's code.
        case settles(URLCache, inMemoryFirst: Bool, hasBlock: Bool)
    }

    /// The cache's part of the end, before the handlers: a `304` becomes the stored response it
    /// validated, what RFC 9111 allows is stored (the cache response block deciding last), what an
    /// unsafe request changed is dropped, and the metrics say what happened. A hit or a validated
    /// response reports its body to the download progress block once.
    ///
    /// The run's `CacheState` stays in the operation's state and its events run there, under the lock:
    /// what they return is carried out here after the lock is released (the storage, the app's block).
    func settleCache() {
        let input: EndInput?
        switch beginSettling() {
        case .settled:
            return
        case .invalidates(let urls, let setting):
            // An unsafe request succeeded: what it changed is dropped before its handlers run.
            if let cache = setting.cache { CacheStorage.removeStoredResponses(for: urls, in: cache) }
            return
        case .withStorage(let read):
            input = read
        }
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
        /// An unsafe request succeeded: the stored responses of these URLs are dropped, from the cache
        /// of this setting.
        case invalidates([URL], CacheSetting)
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
            guard state.run.cache != nil else { return URLConnectionOperation.takeInvalidation(in: &state) }
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

    /// An unsafe request's end (a run with no cache part): `.invalidates` what its success changed, once.
    /// Nothing after a failure, a cancel or an error status. Call inside `state.withLock`.
    private static func takeInvalidation(in state: inout State) -> SettlingStart {
        guard let invalidation = state.run.invalidation else { return .settled }
        state.run.invalidation = nil
        guard let head = state.run.head, state.run.error == nil, !state.lifecycle.isCancelled else { return .settled }
        let urls = invalidation.invalidatedURLs(status: head.statusCode, finalURL: head.url, field: head.joinedValue(for:))
        return urls.isEmpty ? .settled : .invalidates(urls, state.configuration.urlCache)
    }

    /// What was received, as the cache takes it: its fields by lowercased name, whether its body fits
    /// the cache's capacities, and the last hop's request after a redirect.
    private static func received(from input: EndInput) -> CacheState.Received {
        let fits = input.cache.map {
            CacheStorage.takes(bodyOfSize: input.body?.count ?? 0, memoryCapacity: $0.memoryCapacity,
                               diskCapacity: $0.diskCapacity)
        } ?? false
        return CacheState.Received(head: input.head, body: input.body,
                                   finalRequest: input.finalRequest.flatMap { CacheRequest($0) }, fitsCache: fits,
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
