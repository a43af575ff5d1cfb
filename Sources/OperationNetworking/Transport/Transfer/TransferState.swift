/// Where a transfer is in its life, and the events that move it (curl's `mstate()` as the anchor:
/// one funnel, traced). Each event returns what the transfer must do about it; `Transfer.perform(_:)`
/// carries that out, in one place. The network thread drives the events through the transfer's
/// transitions (`Transfer+Lifecycle.swift`).
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
