import Foundation

extension URLConnectionOperation {
    /// When to send the request again after a retryable failure or status (see `RetryPolicy`).
    /// Default `.none`: one attempt, as AFNetworking. Set it before the operation starts; the manager
    /// sets its own on each operation it creates. `copy()` keeps it.
    public var retryPolicy: RetryPolicy {
        get { self[setting: \.retryPolicy] }
        set { self[setting: \.retryPolicy] = newValue }
    }

    /// The attempts made so far: 0 before the operation started, 1 for a request sent once, more when
    /// `retryPolicy` sent it again (the count includes an attempt still waiting out its delay).
    public var attempts: Int { state.withLock { $0.run.attempts } }
}
