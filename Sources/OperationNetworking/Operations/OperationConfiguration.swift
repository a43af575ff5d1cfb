import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a caller configures on an operation, as one value: `copy(with:)` and the manager hand
/// it over whole, so a setting added here cannot be forgotten by either. Read and write the settings
/// as properties (`configuration.credential`), through `Settings`.
///
/// The settings are shared, not copied: every operation a manager makes holds the manager's settings
/// (one reference, not a copy of them each: apps queue operations by the thousand), and an operation
/// made alone holds the one default set. They are never changed in place; writing a setting gives the
/// configuration settings of its own, so no other holder sees the change.
/// - Threading: a value; the operation and the manager each keep theirs in their `Protected` state.
///   The shared settings are immutable.
@dynamicMemberLookup
struct OperationConfiguration {
    /// The settings themselves.
    struct Settings {
        var shouldUseCredentialStorage: Bool = true
        var credential: URLCredential? = nil
        /// The policy set by the caller; `nil` means `SecurityPolicy.default()`, made on first read.
        var securityPolicy: SecurityPolicy? = nil
        var clientCertificate: ClientCertificate? = nil
        var maximumResponseSize: Int64? = nil
        var retryPolicy: RetryPolicy = RetryPolicy.none
        var proxy: ProxySetting = ProxySetting.environment
        var proxyCredential: URLCredential? = nil
        var unixSocketPath: String? = nil
        var completionQueue: DispatchQueue? = nil
        var completionGroup: DispatchGroup? = nil
        var uploadProgressBlock: URLConnectionOperation.UploadProgressBlock? = nil
        var downloadProgressBlock: URLConnectionOperation.DownloadProgressBlock? = nil
        var redirectBlock: URLConnectionOperation.RedirectResponseBlock? = nil
        var challengeBlock: URLConnectionOperation.AuthenticationChallengeBlock? = nil
        var needNewBodyStreamBlock: URLConnectionOperation.NeedNewBodyStreamBlock? = nil
        var didReceiveResponseBlock: URLConnectionOperation.DidReceiveResponseBlock? = nil
        var cacheBlock: URLConnectionOperation.CacheResponseBlock? = nil
        var urlCache: CacheSetting = CacheSetting.shared
        /// Code, not a block: shared by many operations, kept when the operation finishes.
        var interceptor: RequestInterceptor? = nil

        /// Whether any block is set.
        var hasBlocks: Bool {
            uploadProgressBlock != nil || downloadProgressBlock != nil || redirectBlock != nil || challengeBlock != nil
                || needNewBodyStreamBlock != nil || didReceiveResponseBlock != nil || cacheBlock != nil
        }
    }

    /// Settings that never change, so that configurations can share them.
    /// - Threading: immutable after init; any thread (configurations on many threads share one).
    private final class Shared: Sendable {
        let settings: Settings
        init(_ settings: Settings) { self.settings = settings }

        /// Every default, shared by each configuration until its first write.
        static let defaults = Shared(Settings())
    }

    /// The settings (every one its default until set).
    private var shared = Shared.defaults
    /// Read in place: reading one setting does not copy all of them.
    private var settings: Settings { _read { yield shared.settings } }

    /// A setting. Writing one replaces the settings this configuration holds: a write is made while
    /// configuring (not per request), and leaves every other holder's settings as they were.
    subscript<Value>(dynamicMember key: WritableKeyPath<Settings, Value>) -> Value {
        get { settings[keyPath: key] }
        set {
            var changed = shared.settings
            changed[keyPath: key] = newValue
            shared = Shared(changed)
        }
    }

    /// The queue progress blocks and handlers run on, the default applied.
    var effectiveCompletionQueue: DispatchQueue { settings.completionQueue ?? CallbackQueues.callback }
    /// The group handlers run in, the default applied.
    var effectiveCompletionGroup: DispatchGroup { settings.completionGroup ?? CallbackQueues.group }

    /// The same configuration for another operation: the security policy is copied (it is a mutable
    /// class), everything else shared.
    func copied() -> OperationConfiguration {
        var copy = self
        if let policy = self.securityPolicy { copy.securityPolicy = (policy.copy() as? SecurityPolicy) ?? policy }
        return copy
    }

    /// Drops every block (an operation does when it finishes, to break the cycles blocks make). Settings
    /// without a block, the manager's usually, are kept as they are, still shared.
    mutating func releaseBlocks() {
        guard settings.hasBlocks else { return }
        var changed = settings
        changed.uploadProgressBlock = nil
        changed.downloadProgressBlock = nil
        changed.redirectBlock = nil
        changed.challengeBlock = nil
        changed.needNewBodyStreamBlock = nil
        changed.didReceiveResponseBlock = nil
        changed.cacheBlock = nil
        shared = Shared(changed)
    }
}

/// What `dump` and other reflection show of an operation's or a manager's settings: credentials by
/// user alone, never their password (corelibs' `URLCredential` reflects its password in the clear).
extension OperationConfiguration.Settings: CustomReflectable {
    var customMirror: Mirror {
        func shown(_ credential: URLCredential?) -> String {
            guard let credential else { return "nil" }
            return "URLCredential(user: \(credential.user ?? "nil"), password: \(URLRedaction.placeholder))"
        }
        return Mirror(self, children: [
            "shouldUseCredentialStorage": shouldUseCredentialStorage, "credential": shown(credential),
            "securityPolicy": securityPolicy as Any, "clientCertificate": clientCertificate as Any,
            "maximumResponseSize": maximumResponseSize as Any, "retryPolicy": retryPolicy, "proxy": proxy,
            "proxyCredential": shown(proxyCredential), "unixSocketPath": unixSocketPath as Any,
            "completionQueue": completionQueue as Any,
            "completionGroup": completionGroup as Any,
        ], displayStyle: .struct)
    }
}

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
