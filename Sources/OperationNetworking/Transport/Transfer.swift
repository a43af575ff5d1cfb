import CCurl
import CCurlShim
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a transfer left off when it was paused, so a later transfer can continue with a Range request.
struct ResumePoint: Sendable {
    /// Where in the resource the download continues: the first byte the sink does not hold yet. For a
    /// request that carried its own `Range: bytes=A-…` (AFNetworking's pattern for appending to a
    /// partial file) and got a 206, that is A plus the bytes received, not the bytes received alone.
    var offset: Int64
    /// The last byte of the caller's closed range (`bytes=A-B`), kept for the continuation.
    var rangeEnd: Int64? = nil
    /// The `ETag` (preferred) or `Last-Modified` of the response those bytes came from, sent as `If-Range`.
    var validator: String?
    /// Whether the server advertised `Accept-Ranges: bytes`; without it the download restarts from zero.
    var rangesSupported: Bool
    /// The resource's full length when a response said it (a 200's `Content-Length`, a 206's
    /// `Content-Range` total): a continuation must agree with it and end exactly there.
    var totalLength: Int64? = nil
}

/// The caller's own `Range` header, as far as a continuation needs it.
enum CallerRange: Equatable {
    /// `bytes=start-` or `bytes=start-end`.
    case bytes(start: Int64, end: Int64?)
    /// Any other form (several ranges, a suffix range, another unit).
    case unusable

    /// Parses a `Range` header value.
    init(header: String) {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else {
            self = .unusable
            return
        }
        let parts = value.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Int64(parts[0].trimmingCharacters(in: .whitespaces)), start >= 0 else {
            self = .unusable
            return
        }
        let endText = parts[1].trimmingCharacters(in: .whitespaces)
        if endText.isEmpty {
            self = .bytes(start: start, end: nil)
        } else if let end = Int64(endText), end >= start {
            self = .bytes(start: start, end: end)
        } else {
            self = .unusable
        }
    }
}

/// How one transfer ended; handed to the delegate once, on the network thread.
enum TransferOutcome {
    /// A response was received completely (any status code).
    case completed
    /// The transport failed; the error is a `URLError` built by `TransportError`.
    case failed(Error)
    /// `cancel` reached the network thread before the transfer ended.
    case cancelled
    /// `pause` reached the network thread; the bytes so far stay in the sink.
    case paused(ResumePoint)
    /// A response was received completely, but the transfer still failed (a cancelled challenge).
    case completedWithError(Error)
    /// The operation answered it from `URLCache.shared` without the network.
    case answeredFromCache(URLResponse, Data)
}

/// Receives a transfer's events. The methods up to `didSendBytes` are called on the network thread and
/// must be cheap (store, or hand work to a queue); the start and the end arrive on the delivery queue.
protocol TransferDelegate: AnyObject, Sendable {
    /// A redirect response arrived; return the request to follow or `nil` to deliver the 3xx.
    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest?
    /// The final (non-1xx, non-followed) response head arrived.
    func transfer(_ transfer: Transfer, didReceive head: ResponseHead)
    /// A 401/407 arrived that the library may answer; decide how (called once per round).
    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution
    /// Body bytes arrived (after any restart of a resumed download).
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64)
    /// Request body bytes were handed to curl.
    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64)
    /// Attempt `attempt` will be sent after `delay` seconds; on `CallbackQueues.delivery`.
    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?)
    /// The transfer ended; called exactly once, on `CallbackQueues.delivery` (`batch` as above).
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch)
}

/// One HTTP exchange (with its redirect hops) driven by the network thread through one easy handle.
///
/// Its life is the `State` enum and the transitions in `Transfer+Lifecycle.swift`; the network
/// thread calls them and carries out the `HopEndAction`s they return, and never reaches into the
/// redirect, challenge or resume details itself.
/// Stored properties are `@exclusivity(unchecked)`: thread confinement already excludes overlapping
/// access, and the runtime's per-access checks cost several thousand instructions per request.
/// - Threading: created on any thread, then handed to `NetworkThread` once; from then on every
///   stored property is written only on the network thread (checked in debug builds by
///   `assertOnNetworkThread()`), except `cancelRequested`, an atomic any thread may set. `finish()` ends that: the network
///   thread dispatches the end to the delivery queue, where the delegate reads `body`, `head` and
///   `metrics` (the network thread writes nothing after it). That single hand-over is why the class
///   may be `@unchecked Sendable`.
final class Transfer: @unchecked Sendable {
    /// The largest response header block accepted; more fails with `URLError(.cannotParseResponse)`.
    static let maxHeaderBytes = 64 * 1024
    /// At most this many redirects are followed; one more fails with `URLError(.httpTooManyRedirects)`.
    static let maxRedirects = 16

    // MARK: Fixed at creation
    /// The delegate (the operation); strongly held while the transfer runs, released at the end.
    /// Written only by `finish()` (which drops it), on the network thread.
    @exclusivity(unchecked) var delegate: TransferDelegate?
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
    /// Whether the settings above allow a plain configuration (see `Transfer.configure`): system
    /// trust, no client certificate, no resume point, the environment's proxy. Read once, at creation:
    /// testing the optional certificate against `nil` at every hop copied and destroyed it.
    let settingsArePlain: Bool

    // MARK: Network thread only
    /// The request of the current hop (changes on redirects).
    @exclusivity(unchecked) var currentRequest: URLRequest
    /// `currentRequest`'s URL and cookie handling, read once when the hop is configured: corelibs'
    /// `URLRequest` getters cost 100–200 instructions each, and the head's completion needs both.
    @exclusivity(unchecked) var hopURL: URL?
    @exclusivity(unchecked) var hopHandlesCookies = true
    /// The request each attempt starts from (its multipart body replaced by a rebuilt one for a retry).
    @exclusivity(unchecked) var originalRequest: URLRequest
    /// The attempt under way, 1 for the first.
    @exclusivity(unchecked) var attempt = 1
    /// Hops sent again because their server never processed them (`Transfer+Resend.swift`); counted
    /// apart from `attempt`, which the retry policy bounds.
    @exclusivity(unchecked) var unprocessedResends = 0
    /// The network thread that admitted the transfer (set when it takes the transfer in).
    @exclusivity(unchecked) var network: NetworkThread?
    /// The last complete response head.
    @exclusivity(unchecked) var head: ResponseHead?
    /// Response body received in memory (when `outputStream` is nil).
    @exclusivity(unchecked) var body = Data()
    /// Body bytes delivered to the sink, counted across a resume.
    @exclusivity(unchecked) var bytesReceived: Int64 = 0
    /// Redirects followed so far.
    @exclusivity(unchecked) var redirectCount = 0
    /// Monotonic time of the last byte moved or header received; drives the no-progress timeout.
    @exclusivity(unchecked) var lastActivity: UInt64 = 0
    /// Monotonic start of the first hop and of the current hop, for `metrics`.
    @exclusivity(unchecked) var startTime: UInt64 = 0
    @exclusivity(unchecked) var hopStartTime: UInt64 = 0
    /// Filled when a hop ended (`collectMetrics`, the one writer).
    @exclusivity(unchecked) var metrics: TransferMetrics?
    /// Whether `metrics` is filled: asking the optional itself copied it whole (its strings retained).
    @exclusivity(unchecked) var hasMetrics = false
    /// Set by a callback that aborted the transfer, so the outcome says why rather than curl's generic code.
    @exclusivity(unchecked) var abortError: Error?
    /// `errno` of the last socket the open-socket callback could not make (0: none failed).
    @exclusivity(unchecked) var socketOpenError: Int32 = 0
    /// Where the transfer is in its life; changed only through `lifecycle.enter(_:)` (see
    /// `Transfer+Lifecycle.swift`).
    @exclusivity(unchecked) var lifecycle = Lifecycle()
    /// An end decided before the transfer reached the network thread (a cache answer, an output
    /// stream that would not open): set before `submit`, read when the network thread takes it in.
    @exclusivity(unchecked) private(set) var outcomeOnArrival: TransferOutcome?
    /// Set (from any thread) by the operation's `cancel()` before it returns; from then on no request
    /// of this transfer starts: the network thread and the pre-request callback check it.
    private let cancelRequested = Atomic<Bool>(false)

    /// `host:port` of the current hop when it is https (a connection that may turn out HTTP/2), else `nil`.
    @exclusivity(unchecked) var tlsOrigin: String?
    /// Where the transfer is in the network thread's `active` list while its handle is on curl; -1 otherwise.
    @exclusivity(unchecked) var activeIndex = -1
    /// Whether the network thread counts this transfer among those that need a connection each.
    @exclusivity(unchecked) var countedAsSerial = false
    /// What the proxy answered to this hop's `CONNECT`, when it refused the tunnel.
    @exclusivity(unchecked) var tunnelAnswer: TunnelAnswer?
    /// Whether the current hop's policy (a pinning one, or a subclass's `evaluateServerTrust`) decides in
    /// the pre-request callback (set by `configureTLS`).
    @exclusivity(unchecked) var pinsCertificates = false
    /// The trust store the current hop's TLS connection verifies against, when the policy adds anchors
    /// (set by `configureTLS`; held so the store outlives the handshake that uses it).
    @exclusivity(unchecked) var trustStore: TrustStore?
    /// Parsing state of the header block currently arriving.
    @exclusivity(unchecked) var headerParser = ResponseHeaderParser()
    /// What the current hop's response is.
    @exclusivity(unchecked) var hop: Hop = .awaitingHead
    /// Inflates the current response's body when the library asked for compression and the server
    /// used gzip or deflate; `nil` otherwise (bytes pass as they come).
    @exclusivity(unchecked) var decoder: ContentDecoder?
    /// Whether this hop asked for compressed bodies (the request set no `Accept-Encoding` of its own).
    @exclusivity(unchecked) var asksForEncodings = false
    /// Body of a redirect or challenge candidate, kept in case it becomes the response.
    @exclusivity(unchecked) var setAsideBody = Data()
    /// Challenge rounds answered so far.
    @exclusivity(unchecked) var challengeRounds = 0
    /// Credentials chosen in earlier rounds for the server (dropped when a redirect leaves its origin)
    /// and for the proxy.
    @exclusivity(unchecked) var serverCredential: TransferCredential?
    @exclusivity(unchecked) var proxyCredential: TransferCredential?
    /// Bytes of a restarted (200 instead of 206) resumed body to drop because the sink already has them.
    @exclusivity(unchecked) var bytesToSkip: Int64 = 0
    /// Request body source for the current hop.
    @exclusivity(unchecked) var upload: UploadSource?
    /// Upload bytes handed to curl so far.
    @exclusivity(unchecked) var bytesSent: Int64 = 0
    /// libcurl's count of request-head bytes sent when the body was last read (see
    /// `restartBodyIfRequestWasSentAgain`).
    @exclusivity(unchecked) var requestHeadBytesAtBody = 0
    /// Whether the current hop asked for a byte range (a resumed download).
    @exclusivity(unchecked) var sentRange = false
    /// The single range of the caller's own `Range` header (first transfer only); `nil` when it sent
    /// none, and `.unusable` when it sent one the library cannot continue (several ranges, a suffix).
    @exclusivity(unchecked) var callerRange: CallerRange?
    /// Resource offset of the first body byte of a 206 answering the caller's range (0 otherwise).
    @exclusivity(unchecked) var rangeBase: Int64 = 0
    /// Full length of the body being received, counting a resumed prefix; -1 when unknown.
    @exclusivity(unchecked) var expectedBodyLength: Int64 = -1
    /// Where a continuation's body must end (in resource bytes, like `bytesReceived`), when known: a
    /// 206 that ends elsewhere would leave the download short.
    @exclusivity(unchecked) var requiredBodyEnd: Int64?


    /// - Parameters:
    ///   - initialBody: bytes a paused in-memory download already holds; appended to on a 206.
    init(request: URLRequest, outputStream: OutputStream?, resumeFrom: ResumePoint?, initialBody: Data,
         security: SecurityPolicy.Snapshot? = nil, clientCertificate: ClientCertificate? = nil, maximumBodySize: Int64? = nil,
         retryPolicy: RetryPolicy = .none, proxy: ProxySetting = .environment, delegate: TransferDelegate) {
        self.proxy = proxy
        let hasCertificate: Bool
        if case .some = clientCertificate { hasCertificate = true } else { hasCertificate = false }
        settingsArePlain = !hasCertificate && (security?.isSystemDefault ?? true) && resumeFrom == nil && proxy == .environment
        self.clientCertificate = clientCertificate
        self.maximumBodySize = maximumBodySize
        self.retryPolicy = retryPolicy
        self.originalRequest = request
        self.currentRequest = request
        self.outputStream = outputStream
        self.resumeFrom = resumeFrom
        self.security = security
        self.body = initialBody
        self.bytesReceived = resumeFrom?.offset ?? 0
        self.delegate = delegate
    }

    /// The request's no-progress and connect timeout in nanoseconds (`timeoutInterval`, 60 s by default).
    var timeoutNanoseconds: UInt64 {
        let interval = currentRequest.timeoutInterval   // a URLRequest accessor is not free: read once
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
        if hop != .delivering, let resumeFrom {
            // Paused before the continuation's response arrived: it still continues from the same place.
            return resumeFrom
        }
        let etag = head?.value(for: "ETag")
        let modified = head?.value(for: "Last-Modified")
        let supported = head?.value(for: "Accept-Ranges")?.lowercased().contains("bytes") ?? false
        // A partial response already proves ranges work for this resource.
        let honoured = head?.statusCode == 206
        if case .unusable = callerRange, honoured {
            // Continuing a range the library cannot express would corrupt the sink: restart instead.
            return ResumePoint(offset: bytesReceived, validator: etag ?? modified, rangesSupported: false)
        }
        // A partial response says the whole length in Content-Range; a full one, uncompressed, in Content-Length.
        let resourceLength = honoured ? ContentRange(head?.value(for: "Content-Range"))?.total
            : (decoder == nil && head?.statusCode == 200 && expectedBodyLength >= 0 ? expectedBodyLength : nil)
        var rangeEnd = resumeFrom?.rangeEnd
        if case .bytes(_, let end) = callerRange, honoured { rangeEnd = end }
        return ResumePoint(offset: rangeBase.saturatingAdd(bytesReceived), rangeEnd: rangeEnd, validator: etag ?? modified,
                           rangesSupported: supported || honoured, totalLength: resourceLength)
    }
}

extension Int64 {
    /// `self + other`, stuck at `Int64.max` instead of trapping: byte counts and offsets come from
    /// servers and archives, and an absurd one must not stop the process.
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }
}

/// Monotonic clock in nanoseconds, cheap enough for every callback: `clock_gettime` is answered in user
/// space (vDSO), without the layers of `DispatchTime.now()` (about 1,000 instructions per request less at
/// W2; bench/README.md). Its values are only ever compared with each other.
@inline(__always) func monotonicNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(truncatingIfNeeded: time.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: time.tv_nsec)
}
