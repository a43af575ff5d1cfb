import CCurl
import CCurlShim
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP exchange (with its redirect hops and retries) driven by the network thread through one
/// easy handle at a time.
///
/// Its state lives in three lifetimes: what belongs to the whole transfer (the stored properties
/// here, `settings` fixed at creation), what one attempt owns (`current`, an `Attempt` replaced
/// whole when a retry begins) and what one hop owns (`hop`, a `Hop` replaced whole when the next
/// request goes out). Its life is `state`, a `TransferState`; the transitions in
/// `Transfer.swift` drive it and carry out what its events return, and the network thread
/// carries out the `HopEndAction`s they return without reaching into redirect, challenge or resume
/// details itself.
/// - Threading: created on any thread, then handed to `NetworkThread` once; from then on every
///   stored property is used only on the network thread (checked in debug builds by
///   `assertOnItsThread()`), except `cancelRequested`, an atomic any thread may set. `finish()`
///   ends that: the network thread dispatches the end to the delivery queue, where the delegate reads
///   `body`, `head` and `metrics` (the network thread writes nothing after it). That single hand-over
///   is why the class may be `@unchecked Sendable`.
final class Transfer: @unchecked Sendable {
    /// The largest response header block accepted; more fails with `URLError(.cannotParseResponse)`.
    static let maxHeaderBytes = 64 * 1024
    /// At most this many redirects are followed; one more fails with `URLError(.httpTooManyRedirects)`.
    static let maxRedirects = 16

    /// What the operation fixed when it made the transfer.
    struct Settings {
        /// Where response bytes go: `nil` means `body` in memory.
        let outputStream: OutputStream?
        /// Where a resumed download continues from, if it is one.
        let resumeFrom: ResumePoint?
        /// The operation's security policy when the transfer was created.
        let security: SecurityPolicy.Snapshot?
        /// The client certificate offered to servers that ask for one.
        let clientCertificate: ClientCertificate?
        /// The most body bytes accepted (`nil`: no limit); counted after decoding, across a resume.
        let maximumBodySize: Int64?
        /// When to send the request again (`RetryPolicy.none`: never).
        let retryPolicy: RetryPolicy
        /// The proxy the request goes through.
        let proxy: ProxySetting
        /// The environment's proxy variables, read when the transfer was made, for `.environment`
        /// (`nil`: none set, or another setting).
        let proxyEnvironment: ProxyEnvironment?
        /// The Unix domain socket the request goes over (`nil`: TCP, unless its URL is `http+unix`).
        let unixSocketPath: String?
        /// Whether a retry the policy decides ends the transfer (`TransferOutcome.retryRequested`) for its
        /// owner to make the next attempt (it has a `RequestInterceptor` to adapt it), instead of a delay here.
        let retriesThroughOwner: Bool
    }

    /// The network thread's own bookkeeping of the transfer while it is on curl.
    struct Placement {
        /// Where the transfer is in the network loop's `active` list (`NetworkLoop.active`); -1 when not on curl.
        var activeIndex = -1
        /// Whether the network thread counts it among the transfers that need a connection each.
        var countedAsSerial = false
    }

    let settings: Settings
    /// The delegate (the operation); strongly held while the transfer runs, dropped by `finish()`.
    var delegate: TransferDelegate?
    /// The network thread that took the transfer in.
    var network: NetworkThread?
    /// Where the transfer is in its life; changed only through `perform(_:)` of its events.
    var state = TransferState()
    /// The request each attempt starts from (its multipart body replaced by a rebuilt one for a retry).
    var originalRequest: URLRequest
    /// A cache revalidation's fields, sent in place of the request's own of the same name (not copied
    /// into it) until an attempt's first redirect (the operation puts those a redirect keeps on the
    /// request it follows); dropped by a `304` the cache cannot use.
    var conditionalFields: [(name: String, value: String)]
    /// What the attempt under way owns.
    var current: Attempt
    /// What the hop under way owns; replaced only by `beginHop(_:)`.
    var hop: Hop = .beforeFirst
    /// Hops sent again because their server never processed them (`Transfer+Failure.swift`); counted
    /// apart from attempts, which the retry policy bounds.
    var unprocessedResends = 0
    /// Monotonic time the network thread took the transfer in.
    var startTime: UInt64 = 0
    /// Monotonic time the transfer last joined the network thread's FIFO (taken in, or a retry's delay
    /// over). Its timeout runs from here, whatever it waits behind (a full set of active transfers,
    /// the probe of its origin), until its first hop moves a byte.
    var queuedSince: UInt64 = 0
    /// Filled when a hop ended (`collectMetrics`, the one writer).
    var metrics: TransferMetrics?
    var placement = Placement()
    /// An end decided before the transfer reached the network thread (an output stream that would not
    /// open): set before `submit`, read when the network thread takes it in. (A run the cache answers
    /// makes no transfer at all.)
    private(set) var outcomeOnArrival: TransferOutcome?
    /// Set (from any thread) by the operation's `cancel()` before it returns; from then on no request
    /// of this transfer starts: the network thread and the pre-request callback check it.
    private let cancelRequested = Atomic<Bool>(false)

    /// - Parameters:
    ///   - initialBody: bytes a paused in-memory download already holds; appended to on a 206.
    ///   - attempt: the number of its first attempt (an owner that makes the retries counts on).
    ///   - retriesThroughOwner: see `Settings.retriesThroughOwner`.
    ///   - conditionalFields: see `conditionalFields`.
    init(request: URLRequest, conditionalFields: [(name: String, value: String)] = [], outputStream: OutputStream?,
         resumeFrom: ResumePoint?, initialBody: Data,
         security: SecurityPolicy.Snapshot? = nil, clientCertificate: ClientCertificate? = nil, maximumBodySize: Int64? = nil,
         retryPolicy: RetryPolicy = .none, proxy: ProxySetting = .environment, unixSocketPath: String? = nil,
         attempt: Int = 1, retriesThroughOwner: Bool = false, delegate: TransferDelegate) {
        settings = Settings(outputStream: outputStream, resumeFrom: resumeFrom, security: security,
                            clientCertificate: clientCertificate, maximumBodySize: maximumBodySize,
                            retryPolicy: retryPolicy, proxy: proxy,
                            proxyEnvironment: proxy == .environment ? ProxyEnvironment.current() : nil,
                            unixSocketPath: unixSocketPath, retriesThroughOwner: retriesThroughOwner)
        originalRequest = request
        self.conditionalFields = conditionalFields
        current = Attempt(number: attempt, request: request, body: initialBody, bytesReceived: resumeFrom?.offset ?? 0)
        self.delegate = delegate
    }

    // MARK: Read by the operation and the network thread

    var outputStream: OutputStream? { settings.outputStream }
    var resumeFrom: ResumePoint? { settings.resumeFrom }
    /// The attempt under way, 1 for the first.
    var attempt: Int { current.number }
    /// The request of the current hop.
    var currentRequest: URLRequest { current.request }
    var head: ResponseHead? { current.head }
    var body: Data { current.body }
    var bytesReceived: Int64 { current.bytesReceived }
    var hasMetrics: Bool { metrics != nil }
    var tlsOrigin: String? { hop.tlsOrigin }
    /// Whether the hop under way goes over a Unix domain socket.
    var overUnixSocket: Bool { hop.socket != nil }
    var activeIndex: Int {
        get { placement.activeIndex }
        set { placement.activeIndex = newValue }
    }
    var countedAsSerial: Bool {
        get { placement.countedAsSerial }
        set { placement.countedAsSerial = newValue }
    }

    /// The request's no-progress and connect timeout in nanoseconds (`timeoutInterval`, 60 s by default).
    var timeoutNanoseconds: UInt64 {
        let interval = currentRequest.timeoutInterval
        let seconds = interval > 0 ? interval : 60
        return UInt64(min(seconds, 1e9) * 1e9)
    }

    /// Marks the transfer cancelled (any thread); the network thread stops it at its next turn, and
    /// no request of it is sent from now on.
    func requestCancel() {
        cancelRequested.store(true, ordering: .releasing)
    }

    /// Whether `requestCancel()` was called.
    var isCancelRequested: Bool { cancelRequested.load(ordering: .acquiring) }

    /// Ends the transfer with `outcome` as soon as the network thread takes it in; called before `submit`.
    func endOnArrival(_ outcome: TransferOutcome) {
        outcomeOnArrival = outcome
    }

    /// Where the bytes of a paused transfer leave off.
    func resumePoint() -> ResumePoint {
        if hop.kind != .delivering, let resumeFrom {
            // Paused before the continuation's response arrived: it still continues from the same place.
            return resumeFrom
        }
        let head = current.head
        let etag = head?.value(for: "ETag")
        let modified = head?.value(for: "Last-Modified")
        let supported = head?.value(for: "Accept-Ranges")?.lowercased().contains("bytes") ?? false
        // A partial response already proves ranges work for this resource.
        let honoured = head?.statusCode == 206
        if case .unusable = hop.callerRange, honoured {
            // Continuing a range the library cannot express would corrupt the sink: restart instead.
            return ResumePoint(offset: current.bytesReceived, validator: etag ?? modified, rangesSupported: false)
        }
        // A partial response says the whole length in Content-Range; a full one, uncompressed, in Content-Length.
        let expected = current.expectedBodyLength
        let resourceLength = honoured ? ContentRange(head?.value(for: "Content-Range"))?.total
            : (hop.decoder == nil && head?.statusCode == 200 && expected >= 0 ? expected : nil)
        var rangeEnd = resumeFrom?.rangeEnd
        if case .bytes(_, let end) = hop.callerRange, honoured { rangeEnd = end }
        return ResumePoint(offset: current.rangeBase.saturatingAdd(current.bytesReceived), rangeEnd: rangeEnd,
                           validator: etag ?? modified, rangesSupported: supported || honoured,
                           totalLength: resourceLength)
    }
}

// MARK: - Network thread: the transitions the network thread drives

extension Transfer {
    /// What the network thread does once curl reports the current hop done.
    enum HopEndAction {
        /// Recycle the handle and end the transfer with this outcome.
        case finish(TransferOutcome)
        /// Send the next hop (a redirect to follow, a challenge to answer, or the current request
        /// again when its server never processed it: `Transfer+Failure.swift`) on the same handle.
        case sendNextHop
        /// Recycle the handle and send the request again after `delay` seconds (`RetryPolicy`); `error`
        /// is the transport failure, or `nil` for a retryable status.
        case retry(after: TimeInterval, error: Error?)
    }

    /// The easy handle while the transfer is on curl.
    var easy: CurlEasyHandle? {
        assertOnItsThread()
        guard case .active = state.phase else { return nil }
        return current.easy
    }

    /// `created → waiting`: the network thread takes the transfer in (and notes itself and the time).
    /// False when a cancel or pause from another thread overtook the add (the transfer already ended).
    func takeIn(by network: NetworkThread, at now: UInt64) -> Bool {
        assert(network.isCurrentThread, "a transfer is taken in on the network thread that takes it")
        // Nothing changes before the machine agrees: a transfer that already ended stays as it ended.
        guard perform(state.takeIn()) else { return false }
        self.network = network
        startTime = now
        queuedSince = now
        return true
    }

    /// `waiting → active`: configures `easy` for the first hop. On a throw the handle is not the
    /// transfer's and the transfer must end with the error.
    func admit(on easy: CurlEasyHandle) throws {
        assertOnItsThread()
        try configure(easy)
        // The time spent waiting counts: the no-progress timeout runs from when the request was queued,
        // so a request held behind others to a dead endpoint does not wait for their timeouts first.
        hop.lastActivity = min(hop.lastActivity, queuedSince)
        current.easy = easy
        _ = perform(state.admit())
    }

    /// `any → finished`: ends the transfer and hands back its delegate, to be told of the outcome once;
    /// `nil` when the transfer had already ended. The transfer drops its own reference to the delegate.
    func finish() -> TransferDelegate? {
        assertOnItsThread()
        let delegate = self.delegate
        return perform(state.finish()) ? delegate : nil
    }

    /// Leaves curl early (cancel, pause, stall): the handle to take off curl and recycle, if the
    /// transfer had one, with its metrics read first. `finish()` follows at once.
    func leaveCurlEarly() -> CurlEasyHandle? {
        assertOnItsThread()
        guard let easy else { return nil }
        collectMetrics(from: easy)
        return easy
    }

    /// `active → delaying`: off curl until the next attempt is due; the monotonic time it is.
    func delay(for seconds: TimeInterval, now: UInt64) -> UInt64 {
        assertOnItsThread()
        let until = now &+ UInt64(max(0, min(seconds, 1e6)) * 1e9)
        _ = perform(state.delay(until: until))
        return until
    }

    /// `delaying → waiting`: the next attempt starts from a fresh `Attempt` on the original request (a
    /// multipart body the serializer built is rebuilt), queued at `now`. False when the transfer ended
    /// meanwhile (cancelled or paused during the delay).
    func beginNextAttempt(now: UInt64) -> Bool {
        assertOnItsThread()
        queuedSince = now
        return perform(state.wake())
    }

    /// Whether the transfer, waiting without a handle, has waited longer than its timeout at `now`.
    func waitedTooLong(now: UInt64) -> Bool {
        guard case .waiting = state.phase else { return false }
        return now > queuedSince && now - queuedSince > timeoutNanoseconds
    }

    /// Stops a debug build when called anywhere but on the network thread that took the transfer in:
    /// the hand-over that licenses `@unchecked Sendable`, checked rather than trusted. Before `takeIn`
    /// the transfer is still its creator's, which may prepare or end it (ended there when no network
    /// thread runs).
    @inline(__always)
    func assertOnItsThread(file: StaticString = #fileID, line: UInt = #line) {
        assert(network?.isCurrentThread ?? true, "called off the transfer's network thread", file: file, line: line)
    }

    /// A socket curl asked for was opened (`descriptor`), or could not be (`error`, its errno).
    func socketOpened(_ descriptor: Int32, error: Int32) {
        assertOnItsThread()
        if descriptor < 0 {
            hop.socketOpenError = error
        } else {
            network?.idleConnections.opened(descriptor)
        }
    }

    /// Carries out what an event of `state` returned; false when the event was ignored.
    private func perform(_ action: TransferState.Action) -> Bool {
        switch action {
        case .ignore:
            return false
        case .proceed:
            return true
        case .releaseHandle:
            current.easy = nil
            return true
        case .beginNextAttempt:
            if let multipart = originalRequest.httpBodyStream as? MultipartBodyStream {
                originalRequest.httpBodyStream = multipart.rebuilt()
            }
            current = Attempt(number: current.number + 1, request: originalRequest)
            return true
        case .end:
            current.easy = nil
            hop.upload?.close()
            delegate = nil
            return true
        }
    }

    /// curl finished the current hop with `code` (the handle is already off the multi handle):
    /// end the transfer (`finish()` follows, the handle is recycled), or go on with a redirect or a
    /// challenge answer on the same handle. `http1Origins`: the https origins the network thread
    /// knows to speak HTTP/1.x (`OriginProtocols.serial`).
    func hopEnded(code: CURLcode, on easy: CurlEasyHandle, http1Origins: Set<String>) -> HopEndAction {
        assertOnItsThread()
        collectMetrics(from: easy)
        // Cancelled while curl ran the hop (the pre-request callback may have stopped it): a cancel.
        if isCancelRequested { return .finish(.cancelled) }
        if let error = current.abortError { return current.abortIsFinal ? .finish(.failed(error)) : retryOrFinish(.failed(error)) }
        if code != CURLE_OK, resendsUnprocessed(code: code, easy: easy, http1Origins: http1Origins) { return .sendNextHop }
        if code != CURLE_OK, let refusal = proxyRefusalEnded(code: code, easy: easy) { return refusal }
        guard code == CURLE_OK else { return retryOrFinish(.failed(failure(code, easy: easy))) }
        switch hop.kind {
        case .redirect: return redirectEnded()
        case .challenge: return challengeEnded()
        case .unusableNotModified: return unusableNotModifiedEnded()
        case .awaitingHead: return .finish(.completed)
        case .retryable:
            if let delay = retryDelayForStatus() { return .retry(after: delay, error: nil) }
            return .finish(deliverSetAside())
        case .delivering:
            if let shortfall = bodyShortfall(easy) { return retryOrFinish(.failed(shortfall)) }
            if let required = hop.requiredBodyEnd, bytesReceived != required {
                return .finish(.failed(TransportError.make(
                    .networkConnectionLost, "The continued download ended at byte \(bytesReceived) of \(required).",
                    url: currentRequest.url)))
            }
            if let unfinished = unfinishedCompression() { return retryOrFinish(.failed(unfinished)) }
            return .finish(.completed)
        }
    }
}

/// Receives a transfer's events. The methods up to `didSendBytes` are called on the network thread and
/// must be cheap (store, or hand work to a queue); retries and the end arrive on the delivery queue.
/// - Threading: the network thread up to `didSendBytes`; `CallbackQueues.delivery` for retries and the end.
protocol TransferDelegate: AnyObject, Sendable {
    /// A redirect response arrived; return the request to follow or `nil` to deliver the 3xx.
    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest?
    /// A response head arrived that the retry policy may replace (monitors hear of it).
    func transfer(_ transfer: Transfer, didReceive head: ResponseHead)
    /// The response head the caller gets arrived (a final head, or a set-aside redirect, challenge or
    /// retryable response that became the response), before any byte of its body reached the sink:
    /// record it as `didReceive` does and say whether and how its body is delivered. Synchronous, so
    /// that no body byte flows before the answer.
    func transfer(_ transfer: Transfer, willDeliver head: ResponseHead) -> URLConnectionOperation.ResponseDisposition
    /// A `304` arrived: the fields to send the request again without, at once (the cache made it
    /// conditional and the `304` is about another response than the one it holds), or `nil` to take
    /// the `304` as it is.
    func transfer(_ transfer: Transfer, resendsUnconditionallyAfter head: ResponseHead) -> [String]?
    /// A 401/407 arrived that the library may answer; decide how (called once per round).
    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution
    /// A redirect that keeps the body, or an answered challenge, needs the request body again and the
    /// transfer cannot make it itself (a caller's stream, already read): a new stream of the same
    /// bytes, or `nil` to fail with `URLError(.requestBodyStreamExhausted)`.
    func transfer(_ transfer: Transfer, needsNewBodyStreamFor request: URLRequest) -> InputStream?
    /// Body bytes arrived (after any restart of a resumed download).
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64)
    /// Request body bytes were handed to curl.
    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64)
    /// Attempt `attempt` will be sent after `delay` seconds; on `CallbackQueues.delivery`.
    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?)
    /// The transfer ended; called exactly once, on `CallbackQueues.delivery`, with `batch`
    /// gathering the completion-queue work of the same network-thread turn.
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch)
}

extension TransferDelegate {
    /// Records the head and delivers its body as it comes.
    func transfer(_ transfer: Transfer, willDeliver head: ResponseHead) -> URLConnectionOperation.ResponseDisposition {
        self.transfer(transfer, didReceive: head)
        return .allow
    }

    /// A `304` is taken as it is.
    func transfer(_ transfer: Transfer, resendsUnconditionallyAfter head: ResponseHead) -> [String]? { nil }

    /// No new body stream: the transfer fails when it needs one.
    func transfer(_ transfer: Transfer, needsNewBodyStreamFor request: URLRequest) -> InputStream? { nil }
}
