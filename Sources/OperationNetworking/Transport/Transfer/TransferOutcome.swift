import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How one transfer ended; handed to the delegate once, on the network thread.
enum TransferOutcome {
    /// A response was received completely (any status code).
    case completed
    /// The transport failed; the error is a `URLError` built by `TransportError`.
    case failed(Error)
    /// `cancel` reached the network thread before the transfer ended.
    case cancelled
    /// `pause` reached the network thread; the bytes so far stay in the sink.
    case paused(ResumePoint)
    /// A response was received completely, but the transfer still failed (a cancelled challenge).
    case completedWithError(Error)
    /// The operation answered it from its URL cache without the network (the stored response's head and body).
    case answeredFromCache(ResponseHead, Data)
}
