import Foundation

/// Timing and connection facts of one finished transfer, read from libcurl's `CURLINFO_*` values.
///
/// Times are seconds from the start of the transfer (the moment the network thread first handed the
/// request to curl). After redirects, the phase times are those of the last hop, shifted by the time
/// the earlier hops took, so every value stays measured from the same start.
/// - Threading: an immutable value.
public struct TransferMetrics: Sendable, Equatable {
    /// Until the host name was resolved.
    public let nameLookup: TimeInterval
    /// Until the TCP connection was established.
    public let connect: TimeInterval
    /// Until the TLS handshake completed (equal to `connect`-era zero for plain HTTP, as curl reports it).
    public let tlsHandshake: TimeInterval
    /// Until the first response byte arrived.
    public let firstByte: TimeInterval
    /// Until the transfer ended.
    public let total: TimeInterval
    /// The IP address of the server the last hop talked to.
    public let remoteAddress: String?
    /// `"1.0"`, `"1.1"`, `"2"` or `"3"`: the HTTP version of the last response.
    public let httpVersion: String?
    /// `true` when the last hop reused a connection that was already open.
    public let connectionReused: Bool
    /// How many redirects were followed.
    public let redirectCount: Int
    /// How many times the request was sent (1 unless a `RetryPolicy` sent it again; 0 when a stored
    /// response answered without the network).
    public let attempts: Int
    /// What the HTTP cache did: `.hit` when a stored response answered (then every time is 0),
    /// `.revalidated` after a `304`, `.stored`, `.miss`, or `.notConsulted`. Default `.notConsulted`.
    public let cacheStatus: CacheStatus

    /// Creates metrics; the library fills them in, tests may build their own.
    public init(nameLookup: TimeInterval, connect: TimeInterval, tlsHandshake: TimeInterval,
                firstByte: TimeInterval, total: TimeInterval, remoteAddress: String?,
                httpVersion: String?, connectionReused: Bool, redirectCount: Int, attempts: Int = 1,
                cacheStatus: CacheStatus = .notConsulted) {
        self.nameLookup = nameLookup
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.firstByte = firstByte
        self.total = total
        self.remoteAddress = remoteAddress
        self.httpVersion = httpVersion
        self.connectionReused = connectionReused
        self.redirectCount = redirectCount
        self.attempts = attempts
        self.cacheStatus = cacheStatus
    }

    /// The metrics of a run that never reached the network (answered from the cache, or refused by it).
    static func withoutNetwork(cacheStatus: CacheStatus) -> TransferMetrics {
        TransferMetrics(nameLookup: 0, connect: 0, tlsHandshake: 0, firstByte: 0, total: 0, remoteAddress: nil,
                        httpVersion: nil, connectionReused: false, redirectCount: 0, attempts: 0, cacheStatus: cacheStatus)
    }

    /// The same metrics with `cacheStatus` in place.
    func with(cacheStatus: CacheStatus) -> TransferMetrics {
        TransferMetrics(nameLookup: nameLookup, connect: connect, tlsHandshake: tlsHandshake, firstByte: firstByte,
                        total: total, remoteAddress: remoteAddress, httpVersion: httpVersion,
                        connectionReused: connectionReused, redirectCount: redirectCount, attempts: attempts,
                        cacheStatus: cacheStatus)
    }
}
