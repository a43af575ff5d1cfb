import Foundation

/// What a paused download keeps for its continuation: where the bytes leave off and, for an
/// in-memory download, the bytes themselves (an output-stream download keeps them in the stream).
///
/// An object, so that the phases and actions that carry one stay a word wide: as a value (a resume
/// point and `Data`, about 70 bytes) it made `OperationState.Action` a value the compiler copies and
/// drops through the runtime's generic witnesses, on every event of every operation.
/// - Threading: immutable; kept in the operation's lifecycle phase, under its lock.
final class KeptDownload: Sendable {
    /// Where the continuation starts, with the validator it sends as `If-Range`.
    let point: ResumePoint
    /// The body received so far, when the operation has no output stream; empty otherwise.
    let bytes: Data

    init(point: ResumePoint, bytes: Data) {
        self.point = point
        self.bytes = bytes
    }
}

/// The life of a `URLConnectionOperation`, as a plain value: an event in, the new phase and the
/// action the operation carries out (outside its lock) out. Every (phase, event) pair is written out.
///
/// ```
///          start                        transfer's end                            handlers ran
///   ready ───────────▶ executing ──────────────────────────────────▶ completing ─────────────▶ finished
///   │  ▲ resume        │ ▲ │ │ answeredWithoutNetwork                ▲  ▲  ▲
///   │  │ (not started) │ │ │ ▼ (the cache answered)                  │  │  │
///   │  │               │ │ │ answering ─ the answer arrives ─────────┘  │  │
///   │  │               │ │ │   (cancel → cancelling,                    │  │
///   │  │               │ │ │    pause → pausing(then:))                 │  │
///   │  │               │ │ ▼ cancel                                     │  │
///   ▼  │      pause    │ │ cancelling ─ its end, as a cancel ───────────┘  │
///   parked             │ │ resume (continues                               │
///   (kept bytes after  ▼ │  from the kept bytes)                           │
///    a restore)      pausing(then:) ── paused ─────────────────────────────┤ cancel
///   │ start (no kept bytes)                                                │
///   ▼            resume: executing                                         │
///   startedParked ─────────────────────────────────────────────────────────┘ cancel
///
///   parked (kept bytes) ── cancel ──▶ cancelledParked ── start or resume ──▶ completing, as a cancel
/// ```
///
/// AFNetworking 2.x's states (ready → executing → finished, executing ⇄ paused) with its races
/// closed: a `resume()` or `cancel()` made while a pause is on its way to the network thread is
/// remembered (`pausing(then:)`) and carried out when the pause settles; a `cancel()` that returns
/// before the operation learns of its transfer's end always wins (failure with `.cancelled`), and
/// one made after it changes nothing (not even `isCancelled`); the kept bytes of a pause live in
/// the phase, so they are consumed by exactly one continuation and never outlive it; a `start()`
/// that finds the operation parked (its queue read the readiness just before a `pause()` landed) is
/// remembered (`startedParked`), since a queue never starts an operation twice; a restored paused
/// download, which `start()` or `resume()` continues, is ended by either once a `cancel()` came first
/// (`cancelledParked`), since nothing else may ever start it. A run the HTTP cache
/// answers makes no transfer (`answering`): the answer goes from the start straight to the delivery
/// queue, and a `cancel()` or `pause()` meanwhile meets it here, under the operation's lock, as it
/// would meet a transfer's end.
/// Whether a `cancel()` took effect is part of the phase too (`ready(cancelled:)`, `cancelledParked`, `cancelling`,
/// `pausing(then: .cancel)`, `completing(cancelled:)`, `finished(cancelled:)`), never a flag beside it.
/// With a `RequestInterceptor`, a run also waits for it (`intercepting`: OperationState+Interceptor.swift).
/// - Threading: a value; its owner keeps it in its `Protected` state.
struct OperationState {
    /// What happens once a pause on its way to the network thread settled.
    /// - Threading: an immutable value.
    enum AfterPause: Equatable, Sendable {
        /// Stay paused, keeping the bytes.
        case stayPaused
        /// `resume()` came meanwhile: continue from the kept bytes.
        case resume
        /// `cancel()` came meanwhile: end as cancelled.
        case cancel
    }

    /// Where the operation is (a word wide: the kept bytes are an object).
    enum Phase {
        /// Not started; `cancelled` once a `cancel()` came (its `start()` then ends it at once).
        case ready(cancelled: Bool)
        /// Paused before its queue started it: not ready, unless it carries the kept bytes of a
        /// restored archive (then its queue's `start()` continues the download).
        case parked(KeptDownload?)
        /// Parked without kept bytes when its `start()` ran: its queue had already dispatched the start
        /// (it read the readiness before the `pause()` landed), or the caller started it. It holds its
        /// queue slot and sends nothing; `resume()` starts the transfer, `cancel()` ends it cancelled.
        /// (A queue calls `start()` once: forgetting that start would strand the operation.)
        case startedParked
        /// Cancelled while parked with kept bytes (a restored paused archive, which `start()` or `resume()`
        /// continues): either of them now ends it, cancelled, without network traffic. Such an operation
        /// need not be in a queue, and its caller's `resume()` may come after the `cancel()`: as
        /// `ready(cancelled: true)`, which only a `start()` ends, that resume would strand it.
        case cancelledParked
        /// Its transfer is on (or on its way to) the network thread.
        case executing
        /// Waiting for its `RequestInterceptor` (to adapt the next attempt's request, or to decide whether
        /// an attempt is sent again), with no transfer on the network thread; a continuation's kept bytes
        /// wait here. A `cancel()` ends it at once, a `pause()` pauses it at once, without waiting for
        /// the interceptor (whose answer is then dropped).
        case intercepting(KeptDownload?)
        /// Started, and answered without the network (the HTTP cache answered, or refused to load):
        /// no transfer exists, and the answer is on its way to the delivery queue, where it ends the
        /// run as a transfer's end does (`transferEnded()`).
        case answering
        /// `cancel()` was sent to the running transfer; whatever its end, it is delivered as a cancel.
        case cancelling
        /// `pause()` was sent to the running transfer and has not settled yet.
        case pausing(then: AfterPause)
        /// Paused after it started, keeping its queue slot and the bytes so far.
        case paused(KeptDownload)
        /// The transfer ended (as a cancel when `cancelled`); handlers may still be running (the
        /// operation is not yet `isFinished`).
        case completing(cancelled: Bool)
        /// Handlers ran.
        case finished(cancelled: Bool)
    }

    /// What the owner does after an event. An event after which nothing is to be done returns `nil`.
    enum Action {
        /// Begin a run with the cache's decision (for a run from nothing) and put a (new) transfer on
        /// the network thread, continuing `kept` when there is one; when the cache answered, make no
        /// transfer and tell the machine (`answeredWithoutNetwork(_:)`, in the same acquisition of the lock).
        case startTransfer(KeptDownload?)
        /// Send the answer the run got without the network to the delivery queue, where it ends the run.
        case deliverAnswer(TransferOutcome)
        /// Ask the network thread to stop the running transfer (cancel).
        case cancelTransfer
        /// Ask the network thread to stop the running transfer, keeping its bytes, and announce the
        /// pause (a run answered without the network has no transfer to stop).
        case pauseTransfer
        /// End as cancelled without (more) network traffic.
        case completeCancelled
        /// Readiness changed; tell the queue (`isReady`).
        case readinessChanged
        /// The transfer's end is the operation's: deliver it, as a cancel when `cancelled`.
        case deliver(cancelled: Bool)
        /// Turn finished.
        case finish
        /// Ask the interceptor, in a task of its own, for what the event's caller prepared
        /// (`Run.interceptorWork`): adapt the next attempt, or decide about a retry.
        case intercept
        /// The interceptor adapted the request (`Run.adaptedRequest`): put a transfer sending it on the
        /// network thread, continuing `kept` when there is one.
        case sendAdapted(KeptDownload?)
        /// Drop the interceptor's task and end as cancelled without (more) network traffic.
        case cancelInterception
        /// Drop the interceptor's task and announce the pause.
        case pauseInterception
    }

    /// An event that is impossible in a phase: a bug in the library, never a caller's doing (every
    /// call a caller can make is defined in every phase).
    func invalid(_ event: String) -> Never {
        preconditionFailure("OperationState: \(event) in phase \(phase)")
    }

    /// Changed only by the events, here and in OperationState+Interceptor.swift.
    var phase: Phase

    /// A state in `phase` (a new operation's: ready, not cancelled).
    init(phase: Phase = .ready(cancelled: false)) {
        self.phase = phase
    }

    /// Whether `cancel()` took effect (it does not once the transfer's end was delivered): the
    /// operation's `isCancelled`.
    var isCancelled: Bool {
        switch phase {
        case .ready(let cancelled), .completing(let cancelled), .finished(let cancelled): return cancelled
        case .cancelledParked, .cancelling, .pausing(.cancel): return true
        case .parked, .startedParked, .executing, .intercepting, .answering, .pausing(.stayPaused), .pausing(.resume),
             .paused:
            return false
        }
    }

    /// `isExecuting`: started, not paused, not yet finished.
    var isExecuting: Bool {
        switch phase {
        case .executing, .intercepting, .answering, .cancelling, .completing: return true
        case .pausing(let then): return then != .stayPaused
        case .ready, .parked, .startedParked, .cancelledParked, .paused, .finished: return false
        }
    }

    /// `isFinished`.
    var isFinished: Bool {
        if case .finished = phase { return true }
        return false
    }

    /// `isPaused`: paused, or a pause on its way with nothing after it.
    var isPaused: Bool {
        switch phase {
        case .parked, .startedParked, .paused: return true
        case .pausing(let then): return then == .stayPaused
        case .ready, .cancelledParked, .executing, .intercepting, .answering, .cancelling, .completing, .finished: return false
        }
    }

    /// Whether the queue may start it (besides its dependencies): not parked by a `pause()` before it
    /// ever started.
    var mayStart: Bool {
        if case .parked(nil) = phase { return false }
        return true
    }

    /// Whether a pause is on its way to the network thread (archiving waits for it to settle).
    var isPausing: Bool {
        if case .pausing = phase { return true }
        return false
    }

    /// Whether the transfer's end was delivered (the outcome is complete).
    var hasEnded: Bool {
        switch phase {
        case .completing, .finished: return true
        case .ready, .parked, .startedParked, .cancelledParked, .executing, .intercepting, .answering, .cancelling, .pausing,
             .paused:
            return false
        }
    }

    /// Whether the operation ever started: a cancel before then ends it without waiting for a queue.
    var hasStarted: Bool {
        switch phase {
        case .ready, .parked, .cancelledParked: return false
        case .startedParked, .executing, .intercepting, .answering, .cancelling, .pausing, .paused, .completing, .finished:
            return true
        }
    }

    /// Whether `event` (one of the caller events below) would put a transfer on the network thread
    /// from nothing, not continuing kept bytes: the HTTP cache is consulted for such a run only. Asks
    /// the event itself, on a copy, so that no second copy of the rule exists.
    func startsRunFromNothing(_ event: (inout OperationState) -> Action?) -> Bool {
        var copy = self
        if case .startTransfer(nil)? = event(&copy) { return true }
        return false
    }

    // MARK: - Caller events (defined in every phase)

    /// `start()`: run, continue a restored download, or end at once when cancelled.
    mutating func start() -> Action? {
        switch phase {
        case .ready(cancelled: true), .cancelledParked:
            phase = .completing(cancelled: true)
            return .completeCancelled
        case .ready(cancelled: false):
            phase = .executing
            return .startTransfer(nil)
        case .parked(let kept?):
            phase = .executing
            return .startTransfer(kept)
        case .parked(nil):
            // The queue dispatched the start before the pause made it unready (or the caller started
            // it): remember the start, which no one makes again, for `resume()` or `cancel()`.
            phase = .startedParked
            return nil
        case .startedParked, .executing, .intercepting, .answering, .cancelling, .pausing, .paused, .completing, .finished:
            return nil
        }
    }

    /// `cancel()`. `isCancelled` tells afterwards whether it took effect.
    mutating func cancel() -> Action? {
        switch phase {
        case .ready(cancelled: false):
            phase = .ready(cancelled: true)
            return nil   // the queue starts it (a cancel makes it ready) and `start()` ends it
        case .parked(nil):
            phase = .ready(cancelled: true)
            return .readinessChanged
        case .parked(_?):
            // Ready before and after: `start()` (its queue's, if it is in one) or `resume()` ends it.
            phase = .cancelledParked
            return nil
        case .executing:
            phase = .cancelling
            return .cancelTransfer
        case .answering:
            phase = .cancelling
            return nil   // no transfer to stop: the answer on its way is delivered as a cancel
        case .intercepting:
            phase = .completing(cancelled: true)   // nothing on the network thread: ends now
            return .cancelInterception
        case .pausing(.stayPaused), .pausing(.resume):
            phase = .pausing(then: .cancel)
            return nil   // the pause settling ends it
        case .startedParked, .paused:
            phase = .completing(cancelled: true)
            return .completeCancelled
        case .ready(cancelled: true), .cancelledParked, .cancelling, .pausing(.cancel), .completing, .finished:
            // Cancelled already, or the transfer's end was delivered: the response wins.
            return nil
        }
    }

    /// `pause()`.
    mutating func pause() -> Action? {
        switch phase {
        case .ready(cancelled: false):
            phase = .parked(nil)
            return .readinessChanged
        case .executing:
            phase = .pausing(then: .stayPaused)
            return .pauseTransfer
        case .answering:
            // As a pause that a transfer's end overtakes: announced, then the answer ends the run.
            phase = .pausing(then: .stayPaused)
            return .pauseTransfer
        case .pausing(.resume):
            phase = .pausing(then: .stayPaused)   // the pause is still on its way
            return nil
        case .intercepting(let kept):
            // Nothing on the network thread to wait for: paused at once, a continuation keeping its bytes.
            phase = kept.map { .paused($0) } ?? .startedParked
            return .pauseInterception
        case .ready(cancelled: true), .parked, .startedParked, .cancelledParked, .cancelling, .pausing(.stayPaused),
             .pausing(.cancel), .paused, .completing, .finished:
            return nil
        }
    }

    /// `resume()`.
    mutating func resume() -> Action? {
        switch phase {
        case .parked(nil):
            phase = .ready(cancelled: false)
            return .readinessChanged
        case .parked(let kept?):
            phase = .executing
            return .startTransfer(kept)
        case .startedParked:
            phase = .executing
            return .startTransfer(nil)
        case .pausing(.stayPaused):
            phase = .pausing(then: .resume)   // continues when the pause settles
            return nil
        case .paused(let kept):
            phase = .executing
            return .startTransfer(kept)
        case .cancelledParked:
            // The resume that would have continued it ends it, as its `start()` would.
            phase = .completing(cancelled: true)
            return .completeCancelled
        case .ready, .executing, .intercepting, .answering, .cancelling, .pausing(.resume), .pausing(.cancel), .completing,
             .finished:
            return nil
        }
    }

    // MARK: - Library events

    /// The run that `startTransfer` began was answered without the network (`answer`: the stored
    /// response, or the cache's refusal to load): no transfer is made, and the answer goes to the
    /// delivery queue. Comes in the same acquisition of the lock as the start, so no other event sees
    /// the run executing without a transfer.
    mutating func answeredWithoutNetwork(_ answer: TransferOutcome) -> Action? {
        switch phase {
        case .executing:
            phase = .answering
            return .deliverAnswer(answer)
        case .ready, .parked, .startedParked, .cancelledParked, .intercepting, .answering, .cancelling, .pausing, .paused,
             .completing, .finished:
            invalid("answeredWithoutNetwork")
        }
    }

    /// The network thread confirmed a pause; `kept` is where the bytes leave off.
    mutating func transferPaused(_ kept: KeptDownload) -> Action? {
        switch phase {
        case .pausing(.stayPaused):
            phase = .paused(kept)
            return nil   // archiving, waiting for the pause to settle, is woken by its owner
        case .pausing(.resume):
            phase = .executing
            return .startTransfer(kept)
        case .pausing(.cancel):
            phase = .completing(cancelled: true)
            return .completeCancelled
        case .ready, .parked, .startedParked, .cancelledParked, .executing, .intercepting, .answering, .cancelling, .paused,
             .completing, .finished:
            invalid("transferPaused")
        }
    }

    /// The running transfer ended (completed, failed or cancelled on the network thread, or at once
    /// because its output stream would not open), or the answer made without the network arrived on
    /// the delivery queue.
    mutating func transferEnded() -> Action? {
        switch phase {
        case .executing, .answering, .pausing(.stayPaused), .pausing(.resume):
            // A transfer that ended before its pause reached the network thread ends the operation.
            phase = .completing(cancelled: false)
            return .deliver(cancelled: false)
        case .cancelling, .pausing(.cancel):
            phase = .completing(cancelled: true)
            return .deliver(cancelled: true)
        case .ready, .parked, .startedParked, .cancelledParked, .intercepting, .paused, .completing, .finished:
            invalid("transferEnded")
        }
    }

    /// Handlers ran: the operation turns finished.
    mutating func handlersRan() -> Action? {
        switch phase {
        case .completing(let cancelled):
            phase = .finished(cancelled: cancelled)
            return .finish
        case .finished:
            return nil
        case .ready, .parked, .startedParked, .cancelledParked, .executing, .intercepting, .answering, .cancelling, .pausing,
             .paused:
            invalid("handlersRan")
        }
    }
}
