import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a transfer is in its life, and the events that move it (curl's `mstate()` as the anchor:
/// one funnel, traced). Each event returns what the transfer must do about it; `Transfer.perform(_:)`
/// carries that out, in one place. The network thread drives the events through the transfer's
/// transitions (`Transfer.swift`).
///
/// ```
/// created ──takeIn──▶ waiting ──admit──▶ active ──delay──▶ delaying
///    │                 │  ▲                │                  │
///    │                 │  └──────────── wake ─────────────────┘
///    └─────────────────┴──── finish ──────▶ finished ◀────────┘ (from any phase but itself)
/// ```
/// An event a phase does not allow is a bug in the library and stops the process.
/// - Threading: a value; the transfer's is used on the network thread only.
struct TransferState {
    enum Phase: Equatable, CustomStringConvertible {
        /// Built and handed to `submit`; the network thread has not taken it in yet.
        case created
        /// In the network thread's FIFO, without an easy handle.
        case waiting
        /// On curl with the attempt's easy handle.
        case active
        /// Between attempts (`RetryPolicy`): off curl until the monotonic time `until`, then waiting again.
        case delaying(until: UInt64)
        /// Over; its delegate is told once.
        case finished

        var description: String {
            switch self {
            case .created: return "created"
            case .waiting: return "waiting"
            case .active: return "active"
            case .delaying: return "delaying"
            case .finished: return "finished"
            }
        }
    }

    /// What the transfer does about an event.
    enum Action: Equatable {
        /// Nothing: the event came after the transfer had ended (a cancel or pause overtook it).
        case ignore
        /// The phase changed and nothing else is needed: taken in (the thread and the start time are
        /// already noted), or on curl (the handle is configured and the attempt's).
        case proceed
        /// Off curl until the next attempt: the attempt no longer holds the handle (it is recycled).
        case releaseHandle
        /// The retry delay is over: drop everything of the last attempt and start a fresh one.
        case beginNextAttempt
        /// Ended: release the handle, close the request body and hand the delegate back to be told, once.
        case end
    }

    private(set) var phase: Phase = .created
    #if DEBUG
    /// The last phases entered, oldest first (debug builds only), for the message of a bug.
    private(set) var trace: [String] = ["created"]
    #endif

    /// `created → waiting`: the network thread takes the transfer in (ignored once it ended).
    mutating func takeIn() -> Action {
        switch phase {
        case .created: return enter(.waiting, .proceed)
        case .finished: return .ignore
        case .waiting, .active, .delaying: invalid("takeIn")
        }
    }

    /// `waiting → active`: the transfer's first hop is configured on an easy handle.
    mutating func admit() -> Action {
        guard case .waiting = phase else { invalid("admit") }
        return enter(.active, .proceed)
    }

    /// `active → delaying`: off curl until the next attempt is due at `until`.
    mutating func delay(until: UInt64) -> Action {
        guard case .active = phase else { invalid("delay") }
        return enter(.delaying(until: until), .releaseHandle)
    }

    /// `delaying → waiting`: the delay is over (ignored once the transfer ended during it).
    mutating func wake() -> Action {
        switch phase {
        case .delaying: return enter(.waiting, .beginNextAttempt)
        case .finished: return .ignore
        case .created, .waiting, .active: invalid("wake")
        }
    }

    /// `any → finished`: ended, from wherever it was (ignored when it already was).
    mutating func finish() -> Action {
        if case .finished = phase { return .ignore }
        return enter(.finished, .end)
    }

    /// The one place the phase changes.
    private mutating func enter(_ next: Phase, _ action: Action) -> Action {
        phase = next
        #if DEBUG
        trace.append(next.description)
        if trace.count > 16 { trace.removeFirst() }
        #endif
        return action
    }

    private func invalid(_ event: String) -> Never {
        #if DEBUG
        preconditionFailure("Transfer: \(event) in \(phase) (trace: \(trace.joined(separator: " → ")))")
        #else
        preconditionFailure("Transfer: \(event) in \(phase)")
        #endif
    }
}

/// How one transfer ended; handed to the delegate once, on the network thread.
///
/// A word wide: the cases with larger payloads (a pause's resume point, a cached answer, a retry) keep
/// them boxed (`indirect`). Every run's end passes an outcome through several steps; a wider one made
/// each copy and drop go through the runtime's generic witnesses.
enum TransferOutcome {
    /// A response was received completely (any status code).
    case completed
    /// The transport failed; the error is a `URLError` built by `TransportError`.
    case failed(Error)
    /// `cancel` reached the network thread before the transfer ended.
    case cancelled
    /// `pause` reached the network thread; the bytes so far stay in the sink.
    indirect case paused(ResumePoint)
    /// A response was received completely, but the transfer still failed (a cancelled challenge).
    case completedWithError(Error)
    /// Never a transfer's: the run was answered from its URL cache (the stored response's head and
    /// body), so no transfer was made, and the operation ends the run with this as a transfer's end
    /// (`OperationState.answeredWithoutNetwork(_:)`).
    indirect case answeredFromCache(ResponseHead, Data)
    /// The retry policy sends the request again after `after` seconds (`error`: the failure that caused
    /// it, `nil` for a retryable status), and the transfer's owner makes that attempt
    /// (`Transfer.Settings.retriesThroughOwner`): this transfer is over, no body was delivered.
    indirect case retryRequested(after: TimeInterval, error: Error?)
}

/// Where a transfer left off when it was paused, so a later transfer can continue with a Range request.
/// - Threading: a value; copied from the network thread (or an archive) into the operation's
///   `Protected` state.
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

/// Something that happened to a transfer on the network thread that its delegate must hear of off
/// that thread. The network thread gathers them over one loop iteration and hands the whole list to
/// `CallbackQueues.delivery` in one dispatch, in the order they happened.
/// - Threading: made on the network thread and handed over once, in a batch, to `CallbackQueues.delivery`.
enum TransferEvent {
    /// The transfer ended; the delegate was detached from the transfer by `Transfer.finish()`.
    case ended(Transfer, TransferOutcome, TransferDelegate)
    /// Attempt `attempt` will be made after `delay` seconds (`RetryPolicy`); `error` is the failure
    /// that caused it, `nil` for a retryable status.
    case willRetry(Transfer, delay: TimeInterval, attempt: Int, error: Error?, TransferDelegate)

    /// Tells each delegate, in order, then sends the completion-queue work they produced, grouped
    /// per queue. Runs on the delivery queue (or, without a network thread, on the caller's thread).
    static func deliver(_ events: [TransferEvent]) {
        let batch = CompletionBatch()
        // Each event read in place: `for event in events` copied every one, retaining its transfer,
        // outcome and delegate, only to release them again at the end of the turn.
        events.withUnsafeBufferPointer { events in
            for index in events.indices {
                switch events[index] {
                case .ended(let transfer, let outcome, let delegate):
                    delegate.transfer(transfer, didFinishWith: outcome, batch: batch)
                case .willRetry(let transfer, let delay, let attempt, let error, let delegate):
                    delegate.transfer(transfer, willRetryAfter: delay, attempt: attempt, error: error)
                }
            }
        }
        batch.send()
    }
}

/// Timing and connection facts of one finished transfer, read from libcurl's `CURLINFO_*` values.
///
/// Times are seconds from the start of the transfer (the moment the network thread first handed the
/// request to curl). After redirects, the phase times are those of the last hop, shifted by the time
/// the earlier hops took, so every value stays measured from the same start.
/// - Threading: an immutable value.
public struct TransferMetrics: Sendable, Equatable {
    /// Until the host name was resolved.
    public let nameLookup: TimeInterval
    /// Until the TCP connection was established.
    public let connect: TimeInterval
    /// Until the TLS handshake completed (equal to `connect`-era zero for plain HTTP, as curl reports it).
    public let tlsHandshake: TimeInterval
    /// Until the first response byte arrived.
    public let firstByte: TimeInterval
    /// Until the transfer ended.
    public let total: TimeInterval
    /// The IP address of the server the last hop talked to.
    public let remoteAddress: String?
    /// `"1.0"`, `"1.1"`, `"2"` or `"3"`: the HTTP version of the last response.
    public let httpVersion: String?
    /// `true` when the last hop reused a connection that was already open.
    public let connectionReused: Bool
    /// How many redirects were followed.
    public let redirectCount: Int
    /// How many times the request was sent (1 unless a `RetryPolicy` sent it again; 0 when a stored
    /// response answered without the network).
    public let attempts: Int
    /// What the HTTP cache did: `.hit` when a stored response answered (then every time is 0),
    /// `.revalidated` after a `304`, `.stored`, `.miss`, or `.notConsulted`. Default `.notConsulted`.
    public let cacheStatus: CacheStatus

    /// Creates metrics; the library fills them in, tests may build their own.
    public init(nameLookup: TimeInterval, connect: TimeInterval, tlsHandshake: TimeInterval,
                firstByte: TimeInterval, total: TimeInterval, remoteAddress: String?,
                httpVersion: String?, connectionReused: Bool, redirectCount: Int, attempts: Int = 1,
                cacheStatus: CacheStatus = .notConsulted) {
        self.nameLookup = nameLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.firstByte = firstByte
        self.total = total
        self.remoteAddress = remoteAddress
        self.httpVersion = httpVersion
        self.connectionReused = connectionReused
        self.redirectCount = redirectCount
        self.attempts = attempts
        self.cacheStatus = cacheStatus
    }

    /// The metrics of a run that never reached the network (answered from the cache, or refused by it).
    static func withoutNetwork(cacheStatus: CacheStatus) -> TransferMetrics {
        TransferMetrics(nameLookup: 0, connect: 0, tlsHandshake: 0, firstByte: 0, total: 0, remoteAddress: nil,
                        httpVersion: nil, connectionReused: false, redirectCount: 0, attempts: 0, cacheStatus: cacheStatus)
    }

    /// The same metrics with `cacheStatus` in place.
    func with(cacheStatus: CacheStatus) -> TransferMetrics {
        TransferMetrics(nameLookup: nameLookup, connect: connect, tlsHandshake: tlsHandshake, firstByte: firstByte,
                        total: total, remoteAddress: remoteAddress, httpVersion: httpVersion,
                        connectionReused: connectionReused, redirectCount: redirectCount, attempts: attempts,
                        cacheStatus: cacheStatus)
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
