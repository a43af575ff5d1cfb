import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how an operation sends its request again after a failure or a retryable status.
///
/// The retry happens inside the same operation: it stays executing while it waits (a timer on the
/// network thread, no sleeping thread), `cancel()` during the wait ends it at once, and its
/// success/failure blocks run once, with the last attempt's response and body. Download progress
/// restarts from zero for each attempt. The delay before attempt *n + 1* is a random value in
/// `0 ... min(maxDelay, baseDelay × 2^(n-1))` ("full jitter"), unless the response carries a
/// `Retry-After` (seconds or an HTTP-date) and `respectsRetryAfter`: then that is the delay, and a
/// `Retry-After` longer than `maxDelay` ends the retries (the response is delivered as it is).
///
/// Never retried: a request whose body is a stream the caller set (`inputStream`), which cannot be read
/// again (a multipart body the serializer built from data and files is rebuilt), and a download into a
/// caller's output stream that already received body bytes.
/// - Threading: a value; `Sendable`.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included. Default 3; 1 means no retry.
    public var maxAttempts: Int
    /// The base of the exponential backoff, in seconds. Default 0.5.
    public var baseDelay: TimeInterval
    /// The longest delay, in seconds; a `Retry-After` beyond it ends the retries. Default 30.
    public var maxDelay: TimeInterval
    /// Methods that may be sent again. Default: the idempotent GET, HEAD, PUT, DELETE, OPTIONS, TRACE.
    public var retryableMethods: Set<String>
    /// Response statuses that are retried. Default 408, 429, 500, 502, 503, 504.
    public var retryableStatusCodes: Set<Int>
    /// Transport failures that are retried. Default: timed out, cannot connect, connection lost,
    /// cannot find host, DNS lookup failed, not connected to the internet.
    public var retryableErrorCodes: Set<URLError.Code>
    /// Whether a `Retry-After` header sets the delay. Default `true`.
    public var respectsRetryAfter: Bool

    /// A policy; every argument has the default documented on its property.
    public init(maxAttempts: Int = 3, baseDelay: TimeInterval = 0.5, maxDelay: TimeInterval = 30,
                retryableMethods: Set<String> = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"],
                retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
                retryableErrorCodes: Set<URLError.Code> = [.timedOut, .cannotConnectToHost, .networkConnectionLost,
                                                           .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet],
                respectsRetryAfter: Bool = true) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.retryableMethods = Set(retryableMethods.map { $0.uppercased() })
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableErrorCodes = retryableErrorCodes
        self.respectsRetryAfter = respectsRetryAfter
    }

    /// One attempt, no retry: AFNetworking's behaviour and the operation's default.
    public static let none = RetryPolicy(maxAttempts: 1)
    /// Three attempts with the defaults above.
    public static let `default` = RetryPolicy()

    /// The full-jitter delay before the attempt after attempt `attempt` (1-based), in seconds.
    func backoff(after attempt: Int) -> TimeInterval {
        let exponent = Double(max(0, min(attempt - 1, 62)))
        let ceiling = min(max(0, maxDelay), max(0, baseDelay) * pow(2, exponent))
        return ceiling > 0 ? Double.random(in: 0...ceiling) : 0
    }

    /// A `Retry-After` value as a delay in seconds from `now`: delta-seconds or an HTTP-date; `nil`
    /// when it is neither.
    static func retryAfter(_ value: String, now: Date = Date()) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text), seconds >= 0 { return TimeInterval(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}

// MARK: - Archiving (with the manager)

extension RetryPolicy {
    /// The policy as a JSON-compatible dictionary (error codes as their raw values).
    var archived: [String: Any] {
        ["maxAttempts": maxAttempts, "baseDelay": baseDelay, "maxDelay": maxDelay,
         "retryableMethods": retryableMethods.sorted(), "retryableStatusCodes": retryableStatusCodes.sorted(),
         "retryableErrorCodes": retryableErrorCodes.map(\.rawValue).sorted(), "respectsRetryAfter": respectsRetryAfter]
    }

    /// A policy from `archived`'s form; `nil` when a field is missing, of another type or out of range.
    init?(archived: [String: Any]) {
        guard let attempts = archived["maxAttempts"] as? Int, (1...1_000).contains(attempts),
              let base = archived["baseDelay"] as? Double, base.isFinite, base >= 0,
              let cap = archived["maxDelay"] as? Double, cap.isFinite, cap >= 0,
              let methods = archived["retryableMethods"] as? [String],
              let statuses = archived["retryableStatusCodes"] as? [Int],
              let errors = archived["retryableErrorCodes"] as? [Int],
              let respects = archived["respectsRetryAfter"] as? Bool else { return nil }
        self.init(maxAttempts: attempts, baseDelay: base, maxDelay: cap, retryableMethods: Set(methods),
                  retryableStatusCodes: Set(statuses), retryableErrorCodes: Set(errors.compactMap { URLError.Code(rawValue: $0) }),
                  respectsRetryAfter: respects)
    }
}
