import Dispatch
import Foundation

/// Something that happened to a transfer on the network thread that its delegate must hear of off
/// that thread. The network thread gathers them over one loop iteration and hands the whole list to
/// `CallbackQueues.delivery` in one dispatch, in the order they happened.
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
