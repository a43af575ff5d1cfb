import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP cache's part in one run of an operation, as a plain value: an event in (the request is
/// about to go out, a redirect, a challenge answered, the transfer's end, the store done), what to do
/// out. The operation carries the actions out (`URLConnectionOperation+Cache.swift`); the storage reads
/// and writes happen there, never here.
///
/// ```
///         consult                          transfer's end                  store done
///  idle ──────────┬──▶ loading ──────┬──────────────────▶ storing ───────────────────▶ finished(stored…)
///                 ├──▶ revalidating ─┴──────────────────────────────────────────────▶ finished(miss)
///                 ├──▶ answered   a stored response answers (a stale one may start a background revalidation)
///                 └──▶ refused    may not load; nothing more happens
///  bypass, continueDownload ──▶ bypassed ── transfer's end ──▶ finished(notConsulted)
/// ```
///
/// The policies, as `URLRequest.CachePolicy` documents them on Apple's platforms:
/// `.useProtocolCachePolicy` is a private cache of RFC 9111 (fresh: answered; stale with a validator:
/// revalidated; else loaded); `.reloadIgnoringLocalCacheData` loads and stores;
/// `.reloadRevalidatingCacheData` always validates a stored response that has a validator;
/// `.returnCacheDataElseLoad` takes any stored response, whatever its age, else loads;
/// `.returnCacheDataDontLoad` takes any stored response or fails.
/// - Threading: a value; its owner keeps it in its `Protected` state.
struct CacheState {
    /// A stored response found for the request, and the URL it is stored under.
    struct Entry {
        var stored: StoredResponse
        let key: URL
    }

    enum Phase {
        /// Not consulted yet.
        case idle
        /// The cache is not used for this run.
        case bypassed
        /// A stored response answers; the network is not used.
        case answered
        /// The request may not load and nothing stored answers it.
        case refused
        /// On the network, conditional on `entry`.
        case revalidating(CacheRequest, Entry)
        /// On the network; the response replaces `replacing`, if any.
        case loading(CacheRequest, replacing: Entry?)
        /// Waiting for the store (the cache response block decides) to end as `status`.
        case storing(CacheStatus)
        case finished(CacheStatus)
    }

    private(set) var phase: Phase = .idle
    /// Whether the stored response that answered was stale (within its `stale-while-revalidate` window).
    private(set) var answeredStale = false
    /// Whether the run's store is taken and not yet written (`storeWritten()`).
    private var awaitsWrite = false
    /// Whether the store was reported written before the run's end took it (`storeEnded`).
    private var writtenBeforeEnd = false
    /// Whether the transfer answered an authentication challenge: its request then carried credentials.
    private var answeredChallenge = false
    private var redirects = 0

    /// Whether the transfer followed a redirect: its last request is then not the one the run began with.
    var wasRedirected: Bool { redirects > 0 }

    /// What the run's metrics report.
    var status: CacheStatus {
        switch phase {
        case .idle, .bypassed: return .notConsulted
        case .answered: return .hit
        case .refused, .revalidating, .loading: return .miss
        case .storing(let status), .finished(let status): return status
        }
    }

    /// Whether the run ended without the network: answered by a stored response, or refused.
    var endedWithoutNetwork: Bool {
        switch phase {
        case .answered, .refused: return true
        case .idle, .bypassed, .revalidating, .loading, .storing, .finished: return false
        }
    }

    /// Whether the end needs the storage (a store or a merge may follow).
    var mayWriteStorage: Bool {
        switch phase {
        case .revalidating, .loading: return true
        case .idle, .bypassed, .answered, .refused, .storing, .finished: return false
        }
    }

    // MARK: - Before the request goes out

    /// The request is about to go out and the cache can be read; `stored` is what the storage holds
    /// for its URL (looked up only for a request that `usesCache`).
    mutating func consult(_ request: CacheRequest, stored: StoredResponse?, now: Date) -> Decision {
        guard request.usesCache else { return bypass(request) }
        let entry = stored.flatMap { answers(request, $0) ? Entry(stored: $0, key: request.url) : nil }
        switch request.policy {
        case .returnCacheDataElseLoad:
            if let entry, !SecondaryKey.isAuthenticated(entry.stored) { return answer(request, with: entry, now: now) }
            return load(request, replacing: entry)
        case .returnCacheDataDontLoad:
            if let entry, !SecondaryKey.isAuthenticated(entry.stored) { return answer(request, with: entry, now: now) }
            phase = .refused
            return .fail
        case .reloadRevalidatingCacheData:
            if let entry, Validation.hasValidator(entry.stored) { return revalidate(request, entry) }
            return load(request, replacing: entry)
        case .useProtocolCachePolicy:
            return protocolDecision(request, entry, now: now)
        default:
            // `.reloadIgnoringLocalCacheData` and the policies Apple aliases to it.
            return load(request, replacing: nil)
        }
    }

    /// Whether `stored` may answer `request` at all, fresh or validated: its secondary key matches
    /// (§4.1), it was fetched under the trust the request's operation would give the connection
    /// (`CacheTrust`), and its body is within the operation's `maximumResponseSize`. One that may not
    /// is as good as absent: the request loads, and its response may replace it.
    private func answers(_ request: CacheRequest, _ stored: StoredResponse) -> Bool {
        SecondaryKey.matches(stored, request)
            && CacheTrust.admits(recorded: stored.trust, current: request.trust, for: request.url)
            && request.maximumBodySize.map { Int64(stored.body.count) <= $0 } ?? true
    }

    /// The cache is not read for this run (an output stream, a request the cache stays out of).
    /// An unsafe request never gets here: its run keeps only a `CacheInvalidation`.
    mutating func bypass(_ request: CacheRequest) -> Decision {
        bypass(policy: request.policy)
    }

    /// The cache is not read for this run, nor is its response stored. It loads, but fails under
    /// `.returnCacheDataDontLoad`, which may not load.
    mutating func bypass(policy: URLRequest.CachePolicy) -> Decision {
        phase = .bypassed
        return CacheState.decisionWithoutCache(policy: policy)
    }

    /// A run that reads no cache loads, except under `.returnCacheDataDontLoad`, which may not load.
    static func decisionWithoutCache(policy: URLRequest.CachePolicy) -> Decision {
        policy == .returnCacheDataDontLoad ? .fail : .load
    }

    /// A paused download continues: the cache stays out of it (its bytes are not stitched into, nor
    /// served from, a stored response).
    mutating func continueDownload() {
        phase = .bypassed
    }

    /// RFC 9111 for `.useProtocolCachePolicy`: fresh enough and not to be validated first → answered
    /// (§4.2); `only-if-cached` → answered or refused (§5.2.1.7); a validator → revalidated (§4.3);
    /// else loaded. A response stored for a request with credentials always goes back to the origin.
    private mutating func protocolDecision(_ request: CacheRequest, _ entry: Entry?, now: Date) -> Decision {
        let onlyIfCached = request.control.has("only-if-cached")
        guard let entry else {
            if onlyIfCached { return gatewayTimeout(request) }
            return load(request, replacing: nil)
        }
        let responseControl = entry.stored.facts.control
        let validateFirst = request.control.has("no-cache") || responseControl.has("no-cache")
            || SecondaryKey.isAuthenticated(entry.stored)
        let freshness = validateFirst ? nil : Freshness(of: entry.stored, now: now)
        if let freshness, freshness.satisfies(request.control, responseControl: responseControl) {
            return answer(request, with: entry, now: now)
        }
        if onlyIfCached { return gatewayTimeout(request) }
        // RFC 5861 §3, for a request that asks nothing of the age (`max-age`, `min-fresh`): served stale
        // at once, while a run of its own revalidates it as this one would have.
        if let freshness, request.mayRevalidateInBackground,
           !request.control.has("max-age"), !request.control.has("min-fresh"),
           freshness.withinStaleWhileRevalidate(responseControl) {
            let (head, body) = answered(request, with: entry, now: now)
            answeredStale = true
            return .deliverStale(head, body, revalidation: CacheState.revalidation(of: entry, for: request))
        }
        if Validation.hasValidator(entry.stored) { return revalidate(request, entry) }
        return load(request, replacing: entry)
    }

    private mutating func answer(_ request: CacheRequest, with entry: Entry, now: Date) -> Decision {
        let (head, body) = answered(request, with: entry, now: now)
        return .deliver(head, body)
    }

    /// The stored response that answers, its `Age` set (§4).
    private mutating func answered(_ request: CacheRequest, with entry: Entry, now: Date) -> (ResponseHead, Data) {
        let age = Freshness(of: entry.stored, now: now).currentAge
        let ageText = String(Int(min(age, 2_147_483_648)))
        phase = .answered
        if let head = entry.stored.answeringHead {
            return (head.adding(name: "age", value: ageText), entry.stored.body)
        }
        var fields = entry.stored.fields
        fields["age"] = ageText
        return (ResponseHead(url: entry.stored.url, statusCode: entry.stored.statusCode, httpVersion: "HTTP/1.1",
                             fields: fields.map { ($0.key, $0.value) }), entry.stored.body)
    }

    /// A run of its own that revalidates `entry` for `request` (conditional when it has a validator,
    /// else a plain load), in the phase a run of this one would have entered.
    private static func revalidation(of entry: Entry, for request: CacheRequest) -> BackgroundRevalidation {
        var machine = CacheState()
        guard Validation.hasValidator(entry.stored), case .revalidate = machine.revalidate(request, entry) else {
            _ = machine.load(request, replacing: entry)
            return BackgroundRevalidation(machine: machine, fields: [], key: entry.key)
        }
        return BackgroundRevalidation(machine: machine, fields: machine.addedFields, key: entry.key)
    }

    /// A request with `only-if-cached` that nothing stored satisfies is answered `504 Gateway Timeout`,
    /// as RFC 9111 §5.2.1.7 says, without the network (the serializer then fails it as any 504).
    private mutating func gatewayTimeout(_ request: CacheRequest) -> Decision {
        phase = .refused
        return .deliver(ResponseHead(url: request.url, statusCode: 504, httpVersion: "HTTP/1.1",
                                     fields: [("content-length", "0")]), Data())
    }

    private mutating func revalidate(_ request: CacheRequest, _ entry: Entry) -> Decision {
        phase = .revalidating(request, entry)
        return .revalidate
    }

    private mutating func load(_ request: CacheRequest, replacing entry: Entry?) -> Decision {
        phase = .loading(request, replacing: entry)
        return .load
    }

    // MARK: - While the transfer runs

    /// A redirect to `target` is followed; returns the conditional fields to keep on the
    /// next request: only where it goes to the URL the stored response came from, whose validators they are.
    mutating func redirected(to target: URL) -> [(name: String, value: String)] {
        redirects += 1
        guard case .revalidating(_, let entry) = phase, entry.stored.url == target else { return [] }
        return Validation.conditionalFields(for: entry.stored)
    }

    /// The fields the cache added to the request (to take out before a redirect block sees it).
    var addedFields: [(name: String, value: String)] {
        guard case .revalidating(_, let entry) = phase else { return [] }
        return Validation.conditionalFields(for: entry.stored)
    }

    /// Whether the request went out conditional on a stored response (with `addedFields`, never empty).
    var isRevalidating: Bool {
        if case .revalidating = phase { return true }
        return false
    }

    /// The transfer answered an authentication challenge (its request then carried credentials, §3.5).
    mutating func challengeAnswered() {
        answeredChallenge = true
    }

    /// A `304` with `head` arrived for the request. One about another response
    /// than the stored one (a different strong validator, §4.3.4) can neither update nor select it, and
    /// the request was made conditional by the cache, not the caller: returns the fields the cache
    /// added, for the request to go again without them, once (the run now loads, its response replacing
    /// the entry). `nil`: the `304` goes on as received (it validates the entry, or the run already loads).
    mutating func notModifiedArrived(_ head: ResponseHead) -> [String]? {
        guard case .revalidating(let request, let entry) = phase,
              !Validation.notModified(field: head.joinedValue(for:), isAbout: entry.stored) else { return nil }
        phase = .loading(request, replacing: entry)
        return Validation.conditionalFields(for: entry.stored).map(\.name)
    }
}

// MARK: - The transfer's end

extension CacheState {
    /// The transfer ended: `received` is its whole response, or `nil` when it failed, was cancelled or
    /// ended without one (nothing of it is stored then). Returns what to deliver, store and drop.
    mutating func transferEnded(with received: Received?) -> Plan {
        switch phase {
        case .idle, .answered, .refused, .storing, .finished:
            return Plan()
        case .bypassed:
            phase = .finished(.notConsulted)
            return Plan()
        case .revalidating(let request, let entry):
            guard let received else { return end(.miss) }
            guard received.statusCode == 304 else { return replace(entry, request: request, with: received) }
            return validated(entry, by: received)
        case .loading(let request, let entry):
            guard let received, received.statusCode != 304 else { return end(.miss) }
            return replace(entry, request: request, with: received)
        }
    }

    /// The store the plan asked for is done: `stored` says whether anything was stored (the cache
    /// response block may have refused it); `pending`, that it is taken but written later (the library's
    /// store writes its file in batches): `.stored` only once `storeWritten()` says so, before or after
    /// this. Ends the run.
    mutating func storeEnded(stored: Bool, pending: Bool = false) {
        guard case .storing(let status) = phase else { return }
        let waits = pending && !writtenBeforeEnd
        awaitsWrite = status == .stored && stored && waits
        phase = .finished(status == .stored && (!stored || waits) ? .miss : status)
    }

    /// The store the plan asked for was written: a run that ended with it pending now reports `.stored`
    /// (once); one not yet ended does when it ends. Returns whether `status` changed.
    mutating func storeWritten() -> Bool {
        if case .storing = phase {
            writtenBeforeEnd = true
            return false
        }
        guard awaitsWrite else { return false }
        awaitsWrite = false
        phase = .finished(.stored)
        return true
    }

    /// Ends a run that has no store to read or write (no cache set, or a continued download): returns
    /// the status its metrics report, and whether it ended without the network.
    mutating func endWithoutStorage() -> (status: CacheStatus, withoutNetwork: Bool) {
        let withoutNetwork = endedWithoutNetwork
        _ = transferEnded(with: nil)
        storeEnded(stored: false)
        return (status, withoutNetwork)
    }

    private mutating func end(_ status: CacheStatus, removing urls: [URL] = []) -> Plan {
        phase = .finished(status)
        return Plan(remove: urls)
    }

    /// A `304` to the conditional request (§4.3.3): when it is about the stored response, the freshened
    /// response is delivered and stored; otherwise the cache cannot use it (§4.3.4), the `304` is
    /// delivered as received and the stored response dropped (a transfer whose owner heard of it in
    /// time, `notModifiedArrived`, sent the request again instead).
    private mutating func validated(_ entry: Entry, by received: Received) -> Plan {
        let stored = entry.stored
        guard Validation.notModified(field: received.head.joinedValue(for:), isAbout: stored) else {
            return end(.miss, removing: [entry.key])
        }
        // A `304` that changes nothing but `Date` of an entry validated before every use (or one without
        // time of its own) keeps the entry as it is: the response delivered is the entry with the
        // `304`'s `Date`, and nothing is freshened or stored unless the entry is gone meanwhile. Decided
        // from the `304`'s head in place: its fields as the cache keeps them are made only to freshen.
        let notModified = received.head
        if let place = stored.place, stored.isRepeated(byNotModified: notModified) {
            phase = .storing(.revalidated)
            let head = stored.validatedHead(date: notModified.joinedValue(for: "Date"))
            let (requestTime, responseTime) = (received.requestTime, received.responseTime)
            return Plan(deliver: (head, stored.body), repeated: Repeat(entry: entry, place: place, makeResponse: {
                Validation.freshened(stored, by: Storability.storedFields(of: notModified), requestTime: requestTime,
                                     responseTime: responseTime)
            }))
        }
        return freshen(entry, by: Storability.storedFields(of: notModified), received: received)
    }

    /// The entry freshened by a `304` about it (`changes`: the `304`'s stored fields), delivered and stored.
    private mutating func freshen(_ entry: Entry, by changes: [String: String], received: Received) -> Plan {
        let freshened = Validation.freshened(entry.stored, by: changes, requestTime: received.requestTime,
                                             responseTime: received.responseTime)
        phase = .storing(.revalidated)
        let head = ResponseHead(url: freshened.url, statusCode: freshened.statusCode, httpVersion: "HTTP/1.1",
                                fields: freshened.fields.map { ($0.key, $0.value) })
        return Plan(deliver: (head, freshened.body), store: (freshened, [entry.key]))
    }

    /// A full response (§4.3.3, or to an unconditional request): stored when §3 allows it, under the URL
    /// it came from; what it replaces is dropped when it is not stored. Whether it may be stored is read
    /// from its head (`Cache-Control`, `Expires`, `Vary`): one that may not (`no-store`) builds nothing,
    /// and one that repeats the entry found (`Repeat`) builds no entry of its own.
    ///
    /// After a redirect it is stored under its own URL only, never under the request's: a later request
    /// for the original URL goes to the network and meets the redirect again, so the operation's redirect
    /// block decides about it as it would without a cache (an app's guard against other hosts is a
    /// redirect block). Redirects themselves are never stored (`Storability.redirectStatuses`).
    private mutating func replace(_ entry: Entry?, request: CacheRequest, with received: Received) -> Plan {
        let finalURL = received.url
        let keys = [redirects == 0 ? request.url : finalURL]
        let superseded = entry.map { [$0.key] } ?? []
        let authenticated = answeredChallenge || (received.finalRequest ?? request).hasAuthorization
        let control = CacheControl(received.head.joinedValue(for: "Cache-Control"))
        guard let body = received.body, received.fitsCache,
              Storability.mayStore(request: request, status: received.statusCode, control: control,
                                   hasExpires: { received.head.hasField("Expires") }, authenticated: authenticated),
              let varying = SecondaryKey.record(vary: received.head.joinedValue(for: "Vary"),
                                                request: received.finalRequest ?? request, authenticated: authenticated)
        else {
            return end(.miss, removing: superseded)
        }
        phase = .storing(.stored)
        let trust = CacheTrust.recorded(request.trust, for: keys[0])
        if let entry, redirects == 0, let place = entry.stored.place,
           entry.stored.isRepeated(by: received.head, body: body, varying: varying, trust: trust) {
            return Plan(repeated: Repeat(entry: entry, place: place, makeResponse: {
                CacheState.stored(received, body: body, varying: varying, trust: trust, control: control)
            }))
        }
        let stored = CacheState.stored(received, body: body, varying: varying, trust: trust, control: control)
        return Plan(store: (stored, keys), remove: superseded.filter { !keys.contains($0) })
    }
}
