import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// One complete HTTP request as the ``TestServer`` received it, captured when its end arrived.
///
/// Tests assert on what actually went over the wire, so nothing here is normalised: the header
/// list keeps wire order, duplicates and spelling, and `uri` is the raw request target.
public struct RecordedRequest: Sendable {
    /// The request method as sent, e.g. `"GET"` or a custom token.
    public let method: String
    /// The raw request target from the request line, e.g. `"/echo?x=1"`.
    public let uri: String
    /// The path part of `uri` (everything before `?`), not percent-decoded.
    public let path: String
    /// The query items, names and values percent-decoded (`+` is kept literally); the last of
    /// several items with the same name wins.
    public let query: [String: String]
    /// The request headers in wire order, exactly as received.
    public let headers: [(name: String, value: String)]
    /// The complete request body (empty when there was none).
    public let body: Data
    /// Which accepted TCP connection (1, 2, ...) carried this request.
    public let connectionID: Int
    /// When the request's end arrived (for tests that check delays between requests).
    public let receivedAt = Date()

    /// Creates a record; the server builds these, tests normally only read them.
    public init(
        method: String,
        uri: String,
        path: String,
        query: [String: String],
        headers: [(name: String, value: String)],
        body: Data,
        connectionID: Int
    ) {
        self.method = method
        self.uri = uri
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.connectionID = connectionID
    }

    /// The value of the first header called `name`, compared case-insensitively, or `nil`.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// The state the event-loop side shares with ``TestServer``: request log, connection counters
/// and the open child channels (so `shutdown()` can close them).
///
/// It is a separate object, not `TestServer` itself, so channel handlers never retain the server
/// and `TestServer.deinit` can still run and shut everything down. Its lock owns the state.
final class ServerState: Sendable {
    private struct Shared {
        /// Every complete request, in arrival order.
        var log: [RecordedRequest] = []
        /// Number of TCP connections accepted so far (also the last connection ID).
        var accepted = 0
        /// How each TLS handshake ended, in order: whether it completed, and the ALPN protocol it
        /// chose (`nil`: none).
        var handshakes: [(completed: Bool, negotiated: String?)] = []
        /// Child channels that are still open, keyed by connection ID.
        var open: [Int: any Channel] = [:]
    }

    private let shared = NIOLockedValueBox(Shared())

    /// Registers a newly accepted connection and returns its 1-based connection ID.
    func connectionOpened(_ channel: any Channel) -> Int {
        shared.withLockedValue { shared in
            shared.accepted += 1
            shared.open[shared.accepted] = channel
            return shared.accepted
        }
    }

    /// Forgets a connection once its channel has closed.
    func connectionClosed(_ id: Int) {
        shared.withLockedValue { _ = $0.open.removeValue(forKey: id) }
    }

    /// Appends a request to the log.
    func record(_ request: RecordedRequest) {
        shared.withLockedValue { $0.log.append(request) }
    }

    /// A snapshot of the log.
    var requests: [RecordedRequest] { shared.withLockedValue { $0.log } }

    /// Empties the log (connection counters are kept).
    func clearLog() { shared.withLockedValue { $0.log.removeAll() } }

    /// Number of connections accepted so far.
    var acceptedConnections: Int { shared.withLockedValue { $0.accepted } }

    /// Records how a TLS handshake ended (the TLS front's threads call this).
    func handshakeEnded(completed: Bool, protocol negotiated: String?) {
        shared.withLockedValue { $0.handshakes.append((completed, negotiated)) }
    }

    /// The ALPN protocol of each completed handshake, in order (`nil`: none).
    var negotiatedProtocols: [String?] {
        shared.withLockedValue { $0.handshakes.filter(\.completed).map(\.negotiated) }
    }

    /// Number of child channels currently open.
    var openConnections: Int { shared.withLockedValue { $0.open.count } }

    /// The child channels currently open.
    var openChannels: [any Channel] { shared.withLockedValue { Array($0.open.values) } }
}
