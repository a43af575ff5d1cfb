import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Changes each attempt's request before it is sent, and decides whether a finished attempt is sent
/// again: a token applied to every request, refreshed when the server refuses it
/// (`AuthenticationInterceptor` does that), a signature computed per attempt.
///
/// Set one on an operation (`URLConnectionOperation.interceptor`) or on a manager, which copies it onto
/// each operation it makes. Without one (the default) nothing of this runs and nothing costs.
///
/// **When each method runs.**
/// - `adapt(_:for:)` before every attempt: the first, each attempt `RetryPolicy` makes, and each one
///   `retry(_:dueTo:response:)` asks for. It gets the request as the operation would send it without
///   an interceptor (with the fields the HTTP cache adds to revalidate), never an earlier `adapt`'s
///   result: a retry after a token refresh applies the new token to the clean request. What it
///   returns is sent, and is the operation's `currentRequest` until a redirect replaces it. A thrown
///   error fails the operation with that error; nothing is sent.
/// - `retry(_:dueTo:response:)` after every attempt that ended (a response, whatever its status, or a
///   transport error) and that `RetryPolicy` does not send again; never after a cancel or a pause. So
///   the two never both retry the same attempt. `.retry` and `.retryAfter(_:)` send the request again
///   (adapted again) within the same operation: its handlers run once, with the last attempt's
///   outcome, and `attempts` and the monitors' `willRetryAfter` count the attempt. A retry that
///   cannot be made is not made (the outcome stands): a request whose body is a stream of yours, a
///   continued download, or a download into an output stream that already received bytes.
///   A response body is not given to the interceptor: it is the caller's once the operation ends.
///
/// **Where they run.** Both are `async` and run in a `Task` of their own, never on the network
/// thread or a queue's thread, so they may wait (for a token, for a refresh) without holding up
/// anything else. The operation stays executing while they wait. `cancel()` wins at once: the
/// operation ends as cancelled without waiting for them (their `Task` is cancelled, and what they
/// return afterwards is dropped), and nothing is sent after `cancel()` returned. `pause()` while
/// they wait pauses the operation with nothing kept (a continued download keeps its bytes), and
/// `resume()` starts that attempt over, adapting again.
///
/// Never archived with the operation or the manager (it is code); `copy()` keeps it.
/// - Threading: `Sendable`; the methods run on the cooperative thread pool, concurrently for
///   different operations (and for the attempts of one, never).
public protocol RequestInterceptor: Sendable {
    /// The request to send for the next attempt of `operation`, made from `request` (see the type's
    /// documentation for what `request` is). Throw to fail the operation with the error.
    func adapt(_ request: URLRequest, for operation: URLConnectionOperation) async throws -> URLRequest

    /// Whether the attempt of `operation` that just ended is sent again: `error` is how it failed
    /// (`nil` when a response arrived), `response` its response (`nil` when none arrived).
    /// `operation.currentRequest` is the request that attempt sent.
    func retry(_ operation: URLConnectionOperation, dueTo error: Error?, response: HTTPURLResponse?) async
        -> RetryDecision
}

extension RequestInterceptor {
    /// The request unchanged.
    public func adapt(_ request: URLRequest, for operation: URLConnectionOperation) async throws -> URLRequest {
        request
    }

    /// `.doNotRetry`.
    public func retry(_ operation: URLConnectionOperation, dueTo error: Error?, response: HTTPURLResponse?) async
        -> RetryDecision {
        .doNotRetry
    }
}

/// What `RequestInterceptor.retry(_:dueTo:response:)` decided about an attempt.
/// - Threading: an immutable value.
public enum RetryDecision: Sendable, Equatable {
    /// The attempt's outcome is the operation's.
    case doNotRetry
    /// Send the request again at once (adapted again).
    case retry
    /// Send the request again after this many seconds (adapted again, after the wait).
    case retryAfter(TimeInterval)
}

extension URLConnectionOperation {
    /// Adapts each attempt's request and decides about retries beyond `retryPolicy` (see
    /// `RequestInterceptor`). Default `nil`: requests go as they are, and only `retryPolicy` retries.
    /// Set it before the operation starts; the manager sets its own on each operation it creates.
    /// `copy()` keeps it; never archived.
    public var interceptor: RequestInterceptor? {
        get { self[setting: \.interceptor] }
        set { self[setting: \.interceptor] = newValue }
    }
}
