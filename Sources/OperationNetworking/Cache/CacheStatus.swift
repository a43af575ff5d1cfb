/// What the HTTP cache did for one run of an operation (new, not in AFNetworking): read from
/// `TransferMetrics.cacheStatus` once the operation finished, as event monitors do.
///
/// An enum rather than an option set: each run ends in exactly one of these, and `stored` already
/// says "a miss whose response was stored".
/// - Threading: an immutable value.
public enum CacheStatus: String, Sendable, Equatable, CustomStringConvertible {
    /// The cache was not asked: caching off (`urlCache == nil`), a method other than GET, a request
    /// made partial or conditional by the caller, an `outputStream`, or a resumed download.
    case notConsulted
    /// Nothing usable was stored (or it could not be validated) and the response was not stored
    /// either (or not yet: see `stored`); with `.returnCacheDataDontLoad` the operation failed with
    /// `URLError(.resourceUnavailable)`.
    case miss
    /// A stored response answered without the network (a stale one too, while the cache revalidates it
    /// in the background: `stale-while-revalidate`).
    case hit
    /// A stored response was validated by the origin (`304 Not Modified`), updated and delivered.
    case revalidated
    /// The response came from the network and was stored: only once it is. A `URLCache` that stores at
    /// once reports it before the handlers run; the library's default cache writes its file in batches
    /// a moment later, so there the run reports `.miss` at first (what handlers and
    /// `EventMonitor.operationDidFinish(_:)` usually read) and `metrics` turns `.stored` when the batch
    /// is written, after the operation finished. A batch that fails (a full disk) stores nothing: the
    /// status stays `.miss`, and `LoggingEventMonitor` says so on the next operation through the cache.
    case stored

    /// The raw value: `notConsulted`, `miss`, `hit`, `revalidated` or `stored`.
    public var description: String { rawValue }
}
