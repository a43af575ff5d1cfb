import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: when the retry policy sends the request again

extension Transfer {
    /// Whether another attempt may be made at all: attempts left, a method the policy allows, a body
    /// that can be sent again, no bytes given to a caller's stream, not a resumed download.
    var mayRetry: Bool {
        guard attempt < settings.retryPolicy.maxAttempts, resumeFrom == nil,
              settings.retryPolicy.retryableMethods.contains(originalRequest.uppercasedMethod) else { return false }
        if outputStream != nil && bytesReceived > 0 { return false }
        guard let stream = originalRequest.httpBodyStream else { return true }
        return (stream as? MultipartBodyStream)?.canBeRebuilt ?? false   // a caller's own stream: never
    }

    /// A failed attempt: retried when its error is one the policy names, else the transfer ends.
    func retryOrFinish(_ outcome: TransferOutcome) -> HopEndAction {
        guard case .failed(let error) = outcome, mayRetry, let code = (error as? URLError)?.code,
              settings.retryPolicy.retryableErrorCodes.contains(code) else { return .finish(outcome) }
        return .retry(after: settings.retryPolicy.backoff(after: attempt), error: error)
    }

    /// The delay before retrying a retryable status, or `nil` to deliver it: no attempts left, or a
    /// `Retry-After` beyond the policy's `maxDelay`.
    func retryDelayForStatus() -> TimeInterval? {
        guard mayRetry else { return nil }
        if settings.retryPolicy.respectsRetryAfter, let header = head?.value(for: "Retry-After"),
           let requested = RetryPolicy.retryAfter(header) {
            return requested <= settings.retryPolicy.maxDelay ? requested : nil
        }
        return settings.retryPolicy.backoff(after: attempt)
    }

    /// Whether a final response with `status` is one the policy may retry (its body is then set aside).
    func isRetryableStatus(_ status: Int) -> Bool {
        settings.retryPolicy.retryableStatusCodes.contains(status) && mayRetry
    }
}
