/// The events of a run with a `RequestInterceptor`: the operation waits for it (`intercepting`) before
/// each attempt and, after an attempt that `RetryPolicy` does not retry, while it decides. Without an
/// interceptor none of them happens.
///
/// ```
///   executing ── adapt first / retry / decide ──▶ intercepting ── adapted ──▶ executing
///                                                  │  │  └── ended (adapt threw, or no retry) ──▶ completing
///                                                  │  └── pause ──▶ paused(kept) or startedParked
///                                                  └── cancel ──▶ completing(cancelled: true)
/// ```
extension OperationState {
    /// The run must wait for the interceptor before anything is sent: to adapt the first request of a
    /// run (from `startTransfer`, in the same acquisition of the lock), keeping `kept` for the
    /// continuation it adapts.
    mutating func awaitInterceptor(keeping kept: KeptDownload?) -> Action? {
        switch phase {
        case .executing:
            phase = .intercepting(kept)
            return .intercept
        case .ready, .parked, .startedParked, .cancelledParked, .intercepting, .answering, .cancelling, .pausing, .paused,
             .completing, .finished:
            invalid("awaitInterceptor")
        }
    }

    /// The running transfer ended with an outcome the interceptor is asked about: it decides while the
    /// operation waits, unless a cancel or pause came first (then it ends as `transferEnded()` says).
    mutating func transferEndedAskingInterceptor() -> Action? {
        guard case .executing = phase else { return transferEnded() }
        phase = .intercepting(nil)
        return .intercept
    }

    /// The running transfer ended so that `RetryPolicy` sends the request again, through the operation
    /// (which adapts it first): the operation waits for the interceptor, or settles a pause or cancel
    /// that came meanwhile (nothing was kept: a paused retry starts over).
    mutating func transferEndedForRetry() -> Action? {
        switch phase {
        case .executing, .pausing(.resume):
            phase = .intercepting(nil)
            return .intercept
        case .pausing(.stayPaused):
            phase = .startedParked
            return nil
        case .pausing(.cancel):
            phase = .completing(cancelled: true)
            return .completeCancelled
        case .cancelling:
            phase = .completing(cancelled: true)
            return .deliver(cancelled: true)
        case .ready, .parked, .startedParked, .cancelledParked, .intercepting, .answering, .paused, .completing, .finished:
            invalid("transferEndedForRetry")
        }
    }

    /// The interceptor adapted the next attempt's request: send it. A stale answer (after a cancel or a
    /// pause, which left `intercepting`) changes nothing; the operation drops such answers before
    /// they reach the machine, so this is the machine's own guard.
    mutating func interceptorAdapted() -> Action? {
        guard case .intercepting(let kept) = phase else { return nil }
        phase = .executing
        return .sendAdapted(kept)
    }

    /// The interceptor ended the run: its adapt threw (the error is the outcome), or it declined to
    /// retry the attempt that ended (that attempt's outcome is the operation's).
    mutating func interceptorEnded() -> Action? {
        guard case .intercepting = phase else { return nil }
        phase = .completing(cancelled: false)
        return .deliver(cancelled: false)
    }
}
