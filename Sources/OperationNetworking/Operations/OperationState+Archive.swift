/// The events of a decoded archive: the state an archive restores, taken only by a new operation.
extension OperationState {
    /// A decoded archive said the operation was paused with `kept` to continue from. Only an operation
    /// that never started and was never paused or cancelled takes an archive's state (`restore(from:)`
    /// is open: a caller may call it at any time); `false`, and nothing changed, otherwise.
    mutating func restorePaused(_ kept: KeptDownload) -> Bool {
        guard acceptsArchivedState else { return false }
        phase = .parked(kept)
        return true
    }

    /// A decoded archive said the operation had finished (as a cancel when `cancelled`): it is finished
    /// again, its outcome restored beside it (AFN's encoder wrote it finished). Taken only as
    /// `restorePaused(_:)` is; `false`, and nothing changed, otherwise.
    mutating func restoreFinished(cancelled: Bool) -> Bool {
        guard acceptsArchivedState else { return false }
        phase = .finished(cancelled: cancelled)
        return true
    }

    /// Whether an archive's state may replace this one: a new operation's, nothing done to it yet.
    var acceptsArchivedState: Bool {
        switch phase {
        case .ready(cancelled: false): return true
        case .ready(cancelled: true), .parked, .startedParked, .cancelledParked, .executing, .intercepting, .answering,
             .cancelling, .pausing, .paused, .completing, .finished:
            return false
        }
    }
}
