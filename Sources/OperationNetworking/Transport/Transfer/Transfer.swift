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
/// `Transfer+Lifecycle.swift` drive it and carry out what its events return, and the network thread
/// carries out the `HopEndAction`s they return without reaching into redirect, challenge or resume
/// details itself.
/// - Threading: created on any thread, then handed to `NetworkThread` once; from then on every
///   stored property is used only on the network thread (checked in debug builds by
///   `assertOnNetworkThread()`), except `cancelRequested`, an atomic any thread may set. `finish()`
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
    }

    /// The network thread's own bookkeeping of the transfer while it is on curl.
    struct Placement {
        /// Where the transfer is in the network thread's `active` list; -1 when not on curl.
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
    /// What the attempt under way owns.
    var current: Attempt
    /// What the hop under way owns; replaced only by `beginHop(_:)`.
    var hop: Hop = .beforeFirst
    /// Hops sent again because their server never processed them (`Transfer+Resend.swift`); counted
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
    /// An end decided before the transfer reached the network thread (a cache answer, an output
    /// stream that would not open): set before `submit`, read when the network thread takes it in.
    private(set) var outcomeOnArrival: TransferOutcome?
    /// Set (from any thread) by the operation's `cancel()` before it returns; from then on no request
    /// of this transfer starts: the network thread and the pre-request callback check it.
    private let cancelRequested = Atomic<Bool>(false)

    /// - Parameters:
    ///   - initialBody: bytes a paused in-memory download already holds; appended to on a 206.
    init(request: URLRequest, outputStream: OutputStream?, resumeFrom: ResumePoint?, initialBody: Data,
         security: SecurityPolicy.Snapshot? = nil, clientCertificate: ClientCertificate? = nil, maximumBodySize: Int64? = nil,
         retryPolicy: RetryPolicy = .none, proxy: ProxySetting = .environment, delegate: TransferDelegate) {
        settings = Settings(outputStream: outputStream, resumeFrom: resumeFrom, security: security,
                            clientCertificate: clientCertificate, maximumBodySize: maximumBodySize,
                            retryPolicy: retryPolicy, proxy: proxy,
                            proxyEnvironment: proxy == .environment ? ProxyEnvironment.current() : nil)
        originalRequest = request
        current = Attempt(number: 1, request: request, body: initialBody, bytesReceived: resumeFrom?.offset ?? 0)
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
