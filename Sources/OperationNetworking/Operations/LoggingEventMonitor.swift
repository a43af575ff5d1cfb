import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging

/// An `EventMonitor` that logs every operation through swift-log (new, not in AFNetworking).
///
/// One `.info` line per finished operation, `"HTTP request finished"`, with metadata `method`, `url`
/// (scheme, host, port and path only), `status` (when a response arrived), `bytes` (response body
/// bytes received), `duration` (seconds from its start, or from the finish of a never-started
/// operation: 0), `attempts` and `cache` (what the HTTP cache did, a `CacheStatus`: `hit`, `miss`,
/// `revalidated`, `stored` or `notConsulted`; a `hit` served stale while the cache revalidates it in
/// the background, RFC 5861's `stale-while-revalidate`, adds `stale` `true`); a failed one adds
/// `error` as `domain code`. `.debug` lines for the
/// start (`"HTTP request started"`) and each response (`"HTTP response received"`). Once per cache,
/// before the finished line of the first operation that met it, a `.warning` line
/// `"HTTP cache files not used"` with `reason` when the library's shared cache refused its folder or
/// file (another user's, writable by others, a link, another program's database: nothing is read or
/// stored then) or keeps its entries in memory because the folder cannot be made; the operation
/// itself went to the network as usual. Likewise a `.warning` line `"HTTP cache write failed"` with
/// `reason` before the finished line of the first operation after a batch of the cache's writes failed
/// (a full disk): the responses it held were not stored (their operations never reported `.stored`).
///
/// Nothing secret is ever logged: no header values, no query string or fragment, no user or password
/// of the URL, no credential, no body, no error description (those can quote the URL).
/// - Threading: called on the library's monitor queue; the start times live behind a lock of the monitor's own.
public final class LoggingEventMonitor: EventMonitor, Sendable {
    /// The logger every line goes to; its level decides whether the `.debug` lines appear.
    public let logger: Logger
    /// Monotonic start time of each running operation, by identity.
    private let starts = Protected<[ObjectIdentifier: UInt64]>([:])

    /// A monitor logging to `logger`.
    public init(logger: Logger) {
        self.logger = logger
    }

    /// Logs `"HTTP request started"` at `.debug` and notes the start time.
    public func operationDidStart(_ operation: URLConnectionOperation) {
        let now = monotonicNow()
        starts.withLock { $0[ObjectIdentifier(operation)] = now }
        logger.debug("HTTP request started", metadata: LoggingEventMonitor.identity(of: operation))
    }

    /// Logs `"HTTP response received"` at `.debug` with the status code.
    public func operation(_ operation: URLConnectionOperation, didReceive response: HTTPURLResponse) {
        var metadata = LoggingEventMonitor.identity(of: operation)
        metadata["status"] = "\(response.statusCode)"
        logger.debug("HTTP response received", metadata: metadata)
    }

    /// Logs `"HTTP request will be retried"` at `.debug` with the delay, the attempt and the error's
    /// domain and code, once before each further attempt a `RetryPolicy` makes.
    public func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int,
                          error: Error?) {
        var metadata = LoggingEventMonitor.identity(of: operation)
        metadata["delay"] = "\(delay)"
        metadata["attempt"] = "\(attempt)"
        if let error { metadata["error"] = "\(LoggingEventMonitor.describe(error))" }
        logger.debug("HTTP request will be retried", metadata: metadata)
    }

    /// Logs `"HTTP request finished"` at `.info` with status, bytes, duration, attempts and cache status.
    public func operationDidFinish(_ operation: URLConnectionOperation) {
        let now = monotonicNow()
        let start = starts.withLock { $0.removeValue(forKey: ObjectIdentifier(operation)) }
        var metadata = LoggingEventMonitor.identity(of: operation)
        if let status = (operation.response as? HTTPURLResponse)?.statusCode { metadata["status"] = "\(status)" }
        let bytes = operation.responseData.map { Int64($0.count) } ?? operation.bodyBytesDelivered
        metadata["bytes"] = "\(bytes)"
        let seconds = (operation.startedAt ?? start).map { Double(now &- $0) / 1e9 } ?? 0
        metadata["duration"] = "\(String(format: "%.6f", seconds))"
        metadata["attempts"] = "\(max(1, operation.attempts))"
        metadata["cache"] = "\(operation.metrics?.cacheStatus ?? .notConsulted)"
        if operation.cacheAnsweredStale { metadata["stale"] = "true" }
        if let error = operation.error { metadata["error"] = "\(LoggingEventMonitor.describe(error))" }
        if let warning = operation.cacheFileWarning {
            logger.warning("HTTP cache files not used", metadata: ["reason": "\(warning)"])
        }
        if let failure = operation.cacheWriteFailure {
            logger.warning("HTTP cache write failed", metadata: ["reason": "\(failure)"])
        }
        logger.info("HTTP request finished", metadata: metadata)
    }

    /// Method and URL without query, fragment or credentials.
    private static func identity(of operation: URLConnectionOperation) -> Logger.Metadata {
        let request = operation.request
        return ["method": "\(request.httpMethod ?? "GET")", "url": "\(redactedURL(request.url))"]
    }

    /// `scheme://host:port/path` of `url`: what identifies the endpoint, nothing a secret hides in.
    static func redactedURL(_ url: URL?) -> String {
        guard let url, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return "" }
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        return components.string ?? ""
    }

    /// `domain code` of an error: never its description, which may quote a URL with its query.
    private static func describe(_ error: Error) -> String {
        let error = error as NSError
        return "\(error.domain) \(error.code)"
    }
}
