import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Metrics

/// An `EventMonitor` that records every operation through swift-metrics, in OpenTelemetry's HTTP
/// client conventions (new, not in AFNetworking).
///
/// It records into the `MetricsSystem` the program bootstrapped (nothing when it bootstrapped none):
/// - `http.client.request.duration`, a `Timer` (display unit: seconds), once per finished operation:
///   from its first transfer's start to its finish, retries, redirects and pauses included (0 for an
///   operation cancelled before it started). Dimensions: `http.request.method` (`GET`…, `_OTHER` for
///   a method OpenTelemetry does not name), `server.address`, `server.port`, `url.scheme`,
///   `http.response.status_code` and `network.protocol.version` (`1.1`, `2`; when a response arrived),
///   `error.type` (on failure: a `URLError`'s code name such as `cannotConnectToHost` or `cancelled`,
///   the status of a response of 400 or more such as `404`, else the error's domain) and
///   `onet.cache.status` (what the HTTP cache did: a `CacheStatus`, `hit`, `miss`, `revalidated`,
///   `stored` or `notConsulted`).
/// - `http.client.request.body.size` and `http.client.response.body.size`, `Recorder`s (histograms)
///   of bytes with the same dimensions: the request body's length when it is known before it is
///   sent, and the response body's bytes delivered (after content decoding) when a response arrived.
/// - `http.client.active_requests`, a `Meter` of the operations started and not yet finished, with
///   dimensions `server.address`, `server.port` and `url.scheme`.
///
/// No path, query string, fragment, user, header value, body or error description ever becomes a
/// dimension, so the number of series stays bounded by the servers, methods and outcomes.
/// - Threading: called on the library's monitor queue; the operations in flight live behind a lock of
///   the monitor's own.
public final class MetricsEventMonitor: EventMonitor, Sendable {
    /// The `http.client.active_requests` dimensions of each operation counted in flight, by identity.
    private let inFlight = Protected<[ObjectIdentifier: [(String, String)]]>([:])

    /// A monitor recording into the bootstrapped `MetricsSystem`.
    public init() {}

    /// Counts the operation in `http.client.active_requests`.
    public func operationDidStart(_ operation: URLConnectionOperation) {
        let dimensions = HTTPClientFacts(request: operation.request).startDimensions
        inFlight.withLock { $0[ObjectIdentifier(operation)] = dimensions }
        Meter(label: "http.client.active_requests", dimensions: dimensions).increment()
    }

    /// Records the duration and the body sizes, and counts the operation out of
    /// `http.client.active_requests`.
    public func operationDidFinish(_ operation: URLConnectionOperation) {
        let now = monotonicNow()
        if let counted = inFlight.withLock({ $0.removeValue(forKey: ObjectIdentifier(operation)) }) {
            Meter(label: "http.client.active_requests", dimensions: counted).decrement()
        }
        let facts = HTTPClientFacts.finished(operation)
        let dimensions = facts.dimensions
        let nanoseconds = operation.startedAt.map { Int64(clamping: now &- $0) } ?? 0
        Timer(label: "http.client.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds)
            .recordNanoseconds(nanoseconds)
        if let size = facts.requestBodySize {
            Recorder(label: "http.client.request.body.size", dimensions: dimensions).record(size)
        }
        if let size = facts.responseBodySize {
            Recorder(label: "http.client.response.body.size", dimensions: dimensions).record(size)
        }
    }
}
