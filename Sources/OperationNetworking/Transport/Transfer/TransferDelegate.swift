import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Receives a transfer's events. The methods up to `didSendBytes` are called on the network thread and
/// must be cheap (store, or hand work to a queue); retries and the end arrive on the delivery queue.
protocol TransferDelegate: AnyObject, Sendable {
    /// A redirect response arrived; return the request to follow or `nil` to deliver the 3xx.
    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest?
    /// A response head arrived that the retry policy may replace (monitors hear of it).
    func transfer(_ transfer: Transfer, didReceive head: ResponseHead)
    /// The response head the caller gets arrived (a final head, or a set-aside redirect, challenge or
    /// retryable response that became the response), before any byte of its body reached the sink:
    /// record it as `didReceive` does and say whether and how its body is delivered. Synchronous, so
    /// that no body byte flows before the answer.
    func transfer(_ transfer: Transfer, willDeliver head: ResponseHead) -> URLConnectionOperation.ResponseDisposition
    /// A `304` arrived: the fields to send the request again without, at once (the cache made it
    /// conditional and the `304` is about another response than the one it holds), or `nil` to take
    /// the `304` as it is.
    func transfer(_ transfer: Transfer, resendsUnconditionallyAfter head: ResponseHead) -> [String]?
    /// A 401/407 arrived that the library may answer; decide how (called once per round).
    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution
    /// A redirect that keeps the body, or an answered challenge, needs the request body again and the
    /// transfer cannot make it itself (a caller's stream, already read): a new stream of the same
    /// bytes, or `nil` to fail with `URLError(.requestBodyStreamExhausted)`.
    func transfer(_ transfer: Transfer, needsNewBodyStreamFor request: URLRequest) -> InputStream?
    /// Body bytes arrived (after any restart of a resumed download).
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64)
    /// Request body bytes were handed to curl.
    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64)
    /// Attempt `attempt` will be sent after `delay` seconds; on `CallbackQueues.delivery`.
    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?)
    /// The transfer ended; called exactly once, on `CallbackQueues.delivery`, with `batch`
    /// gathering the completion-queue work of the same network-thread turn.
    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch)
}

extension TransferDelegate {
    /// Records the head and delivers its body as it comes.
    func transfer(_ transfer: Transfer, willDeliver head: ResponseHead) -> URLConnectionOperation.ResponseDisposition {
        self.transfer(transfer, didReceive: head)
        return .allow
    }

    /// A `304` is taken as it is.
    func transfer(_ transfer: Transfer, resendsUnconditionallyAfter head: ResponseHead) -> [String]? { nil }

    /// No new body stream: the transfer fails when it needs one.
    func transfer(_ transfer: Transfer, needsNewBodyStreamFor request: URLRequest) -> InputStream? { nil }
}
