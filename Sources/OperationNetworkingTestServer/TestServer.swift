import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// An in-process HTTP/1.1 server on an ephemeral loopback port, for tests and demos.
///
/// It starts serving as soon as `init` returns, records every complete request it receives
/// (``requests``), and offers fixed routes (`/echo`, `/status/<code>`, `/bytes/<n>`, `/gzip`,
/// `/brotli/<n>`, `/zstd/<n>`, `/redirect/<n>`, `/drop/<n>`, `/stall`, ...) that produce
/// well-defined, sometimes deliberately broken, responses. Call ``shutdown()`` when done (deinit does it otherwise).
///
/// With a TLS identity it serves HTTPS: a TLS front (`TLSFront`) listens on ``port``, terminates TLS and
/// relays each connection, one to one, to the plain server on 127.0.0.1.
///
/// With ``init(unixSocketPath:)`` it listens on a Unix domain socket instead, with the same routes.
///
/// Its one mutable value, whether it was shut down, is owned by a lock; the request log and counters
/// live in `ServerState`.
public final class TestServer: Sendable {
    /// The TCP port the server listens on: the one given, or one the kernel chose; 0 on a Unix socket.
    public let port: Int
    /// The Unix domain socket the server listens on (``init(unixSocketPath:)``); `nil` over TCP.
    public let unixSocketPath: String?

    private let group: MultiThreadedEventLoopGroup
    private let serverChannel: any Channel
    /// The TLS side of an HTTPS server; `nil` for plain HTTP.
    private let front: TLSFront?
    private let state: ServerState
    private let base: URL
    /// Set by the first `shutdown()` so later calls (and deinit) do nothing.
    private let isShutDown = NIOLockedValueBox(false)

    /// Starts a server bound to `host` on `port` (an ephemeral one by default) and begins serving immediately.
    ///
    /// - Parameters:
    ///   - host: The address to bind; loopback by default.
    ///   - port: The port clients connect to (the TLS front's with `tls`); 0, the default, lets the
    ///     kernel choose one.
    ///   - tls: Serve HTTPS (TLS 1.2 and 1.3) with this identity (its chain is presented as given);
    ///     `nil` serves plain HTTP.
    ///   - clientCertificateAuthority: With `tls`, require a client certificate issued by this CA (DER);
    ///     a handshake without one fails.
    ///   - applicationProtocols: With `tls`, the ALPN protocols the server accepts, in preference order:
    ///     the first the client also offers is chosen; with none in common, none is.
    /// - Throws: If a socket cannot be bound, or the TLS identity or a protocol name is unusable.
    public init(host: String = "127.0.0.1", port: Int = 0, tls: TestIdentity? = nil, clientCertificateAuthority: Data? = nil,
                applicationProtocols: [String] = ["http/1.1"]) throws {
        // One thread is plenty for tests and keeps every handler on a single, predictable loop.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = ServerState()
        do {
            // Behind a TLS front, the plain server is reached only by the front, over loopback.
            let plainHost = tls == nil ? host : "127.0.0.1"
            let channel = try TestServer.bootstrap(group, state).bind(host: plainHost, port: tls == nil ? port : 0).wait()
            guard let plainPort = channel.localAddress?.port else {
                throw TestServerError.noLocalAddress
            }
            self.serverChannel = channel
            let front = try tls.map {
                try TLSFront(host: host, port: port, backendPort: plainPort, identity: $0,
                             clientCertificateAuthority: clientCertificateAuthority,
                             applicationProtocols: applicationProtocols, state: state)
            }
            self.front = front
            self.port = front?.port ?? plainPort
            // An IPv6 literal needs brackets inside a URL.
            let urlHost = host.contains(":") ? "[\(host)]" : host
            guard let base = URL(string: "\(tls == nil ? "http" : "https")://\(urlHost):\(self.port)") else {
                throw TestServerError.invalidBaseURL(host)
            }
            self.base = base
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        self.group = group
        self.state = state
        self.unixSocketPath = nil
    }

    /// Starts a plain HTTP/1.1 server on the Unix domain socket at `unixSocketPath` (a file there
    /// already is replaced), with the routes of a TCP one; ``baseURL`` is `http://localhost`, the URL a
    /// client sends over the socket.
    /// - Throws: If the socket cannot be bound (a path too long for a socket address, a folder that
    ///   does not exist).
    public init(unixSocketPath: String) throws {
        guard let base = URL(string: "http://localhost") else { throw TestServerError.invalidBaseURL("localhost") }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = ServerState()
        do {
            self.serverChannel = try TestServer.bootstrap(group, state, tcp: false)
                .bind(unixDomainSocketPath: unixSocketPath, cleanupExistingSocketFile: true).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        self.front = nil
        self.port = 0
        self.base = base
        self.group = group
        self.state = state
        self.unixSocketPath = unixSocketPath
    }

    /// The plain HTTP/1.1 server's bootstrap: every accepted connection gets the server's pipeline.
    /// Over a Unix domain socket (`tcp` false) it sets no TCP option: the socket has none.
    private static func bootstrap(_ group: MultiThreadedEventLoopGroup, _ state: ServerState, tcp: Bool = true) -> ServerBootstrap {
        var bootstrap = ServerBootstrap(group: group).serverChannelOption(.backlog, value: 1024)
        if tcp {
            bootstrap = bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // Nagle off: otherwise a small response on a reused connection waits ~40 ms for the
                // client's delayed ACK.
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
        }
        return bootstrap
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let id = state.connectionOpened(channel)
                    channel.closeFuture.whenComplete { _ in state.connectionClosed(id) }
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.configureHTTPServerPipeline()
                    try pipeline.addHandler(TestServerHandler(connectionID: id, state: state))
                }
            }
    }

    deinit {
        shutdown()
    }

    /// `http://<host>:<port>` (or `https://`), without a trailing slash.
    public var baseURL: URL { base }

    /// ``baseURL`` followed by `pathAndQuery`, e.g. `url("/echo?x=1")`.
    ///
    /// Characters that are not allowed in a URL are percent-encoded; a string that still does
    /// not form a URL is a programming error in the caller and traps.
    public func url(_ pathAndQuery: String) -> URL {
        let suffix = pathAndQuery.hasPrefix("/") ? pathAndQuery : "/" + pathAndQuery
        let prefix = base.absoluteString
        if let url = URL(string: prefix + suffix) { return url }
        var allowed = CharacterSet.urlQueryAllowed
        allowed.insert(charactersIn: "/?&=%")
        if let encoded = suffix.addingPercentEncoding(withAllowedCharacters: allowed),
            let url = URL(string: prefix + encoded)
        {
            return url
        }
        preconditionFailure("TestServer.url: cannot form a URL from \(pathAndQuery)")
    }

    /// Stops the server: closes the listening sockets and every open connection (the TLS front's
    /// first), then shuts the event loop group down synchronously. Safe to call more than once.
    ///
    /// Must not be called from the server's own event loop (it waits for that loop).
    public func shutdown() {
        let alreadyShutDown = isShutDown.withLockedValue { shutDown in
            defer { shutDown = true }
            return shutDown
        }
        guard !alreadyShutDown else { return }
        front?.stop()
        // Failures here only mean a channel was already closed, which is the goal anyway.
        try? serverChannel.close().wait()
        let closing = state.openChannels.map { $0.close() }
        if !closing.isEmpty {
            try? EventLoopFuture.andAllComplete(closing, on: group.next()).wait()
        }
        try? group.syncShutdownGracefully()
    }

    /// Every complete request received so far, in arrival order.
    public var requests: [RecordedRequest] { state.requests }

    /// The received requests whose path (without query) is exactly `path`.
    public func requests(path: String) -> [RecordedRequest] {
        state.requests.filter { $0.path == path }
    }

    /// Forgets all recorded requests; connection counters are unaffected.
    public func clearLog() {
        state.clearLog()
    }

    /// For HTTPS: the ALPN protocol each completed TLS handshake chose, in order (`nil`: none).
    public var negotiatedProtocols: [String?] { state.negotiatedProtocols }

    /// The number of connections (TCP or Unix socket) accepted so far.
    public var acceptedConnections: Int { state.acceptedConnections }

    /// The number of accepted connections that are still open.
    public var openConnections: Int { state.openConnections }
}

/// Why ``TestServer/init(host:)`` could not start.
enum TestServerError: Error, CustomStringConvertible {
    case noLocalAddress
    case invalidBaseURL(String)
    /// An ALPN protocol name must be 1 to 255 bytes.
    case invalidApplicationProtocol(String)
    /// The TLS front could not start (an unusable identity, or no socket); OpenSSL's reason.
    case tlsUnavailable(String)

    var description: String {
        switch self {
        case .noLocalAddress: return "the bound server channel has no local port"
        case .invalidBaseURL(let host): return "cannot build a URL for host \(host)"
        case .invalidApplicationProtocol(let name): return "ALPN protocol names are 1 to 255 bytes: \"\(name)\""
        case .tlsUnavailable(let reason): return "the TLS front did not start: \(reason)"
        }
    }
}
