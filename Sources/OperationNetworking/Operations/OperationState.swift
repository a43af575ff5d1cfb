/// The life of a `URLConnectionOperation`, as a plain value: events in, the new state and what to do out.
///
/// States follow AFNetworking 2.x (ready → executing → finished, executing ⇄ paused) with its known
/// bugs fixed: a paused operation can be cancelled (it finishes), and resuming a paused operation
/// that never started hands it back to its queue instead of starting it twice.
/// - Threading: a value; its owner keeps it behind the operation's lock.
struct OperationState {
    /// Where the operation is.
    enum Phase: Equatable {
        case ready
        case executing
        /// Paused; `started` tells whether it had been started (it then keeps its queue slot).
        case paused(started: Bool)
        /// The transfer ended; handlers may still be running (the operation is not yet `isFinished`).
        case completing
        case finished
    }

    /// What the owner must do after an event, outside its lock.
    enum Action: Equatable {
        case none
        /// Put a transfer on the network thread (a start or a resume).
        case startTransfer
        /// Ask the network thread to stop the current transfer (cancel).
        case cancelTransfer
        /// Ask the network thread to stop the current transfer, keeping its bytes (pause).
        case pauseTransfer
        /// End without (more) network traffic: cancelled before start, or cancelled while paused.
        case completeCancelled
        /// Readiness changed; tell the queue (`isReady`).
        case readinessChanged
    }

    private(set) var phase: Phase = .ready
    /// Whether a pause reached the network thread and its bytes are kept for a resume.
    private(set) var hasResumePoint = false
    /// Whether a resume arrived before the network thread confirmed the pause.
    private(set) var resumeWhenPaused = false

    var isExecuting: Bool { phase == .executing || phase == .completing }
    var isFinished: Bool { phase == .finished }
    var isPaused: Bool { if case .paused = phase { return true } else { return false } }

    /// `start()`: run, or end at once when already cancelled.
    mutating func start(cancelled: Bool) -> Action {
        switch phase {
        case .ready:
            if cancelled {
                phase = .completing
                return .completeCancelled
            }
            phase = .executing
            return .startTransfer
        case .paused(started: false) where hasResumePoint:
            // Decoded paused operations continue when their queue starts them.
            phase = .executing
            return .startTransfer
        default:
            return .none
        }
    }

    /// `cancel()`.
    mutating func cancel() -> Action {
        switch phase {
        case .executing:
            return .cancelTransfer
        case .paused(started: true):
            phase = .completing
            return .completeCancelled
        case .paused(started: false):
            // Its queue never started it: make it ready so the queue starts it, and start finishes it.
            phase = .ready
            return .readinessChanged
        default:
            return .none
        }
    }

    /// `pause()`.
    mutating func pause() -> Action {
        switch phase {
        case .executing:
            phase = .paused(started: true)
            resumeWhenPaused = false
            return .pauseTransfer
        case .ready:
            phase = .paused(started: false)
            return .readinessChanged
        default:
            return .none
        }
    }

    /// `resume()`.
    mutating func resume() -> Action {
        switch phase {
        case .paused(started: true):
            phase = .executing
            guard hasResumePoint else {
                resumeWhenPaused = true   // the pause is still on its way to the network thread
                return .none
            }
            hasResumePoint = false
            return .startTransfer
        case .paused(started: false) where !hasResumePoint:
            phase = .ready
            return .readinessChanged
        case .paused(started: false):
            phase = .executing
            hasResumePoint = false
            return .startTransfer
        default:
            return .none
        }
    }

    /// The network thread confirmed a pause; the bytes so far are kept.
    mutating func transferPaused() -> Action {
        if resumeWhenPaused {
            resumeWhenPaused = false
            return .startTransfer
        }
        if isPaused { hasResumePoint = true }
        return .none
    }

    /// A decoded archive said the operation was paused with bytes to continue from.
    mutating func restorePaused() {
        phase = .paused(started: false)
        hasResumePoint = true
    }

    /// The transfer ended (completed, failed or cancelled): handlers run next. False if already ending.
    mutating func transferEnded() -> Bool {
        switch phase {
        case .completing, .finished:
            return false
        default:
            phase = .completing
            return true
        }
    }

    /// Handlers ran; the operation turns finished. False if it already was.
    mutating func finish() -> Bool {
        guard phase != .finished else { return false }
        phase = .finished
        return true
    }
}
