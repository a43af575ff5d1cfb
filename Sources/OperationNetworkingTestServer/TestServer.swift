import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL
import NIOTLS

/// An in-process HTTP/1.1 server on an ephemeral loopback port, for tests and demos.
///
/// It starts serving as soon as `init` returns, records every complete request it receives
/// (``requests``), and offers fixed routes (`/echo`, `/status/<code>`, `/bytes/<n>`, `/gzip`,
/// `/brotli/<n>`, `/zstd/<n>`, `/redirect/<n>`, `/drop/<n>`, `/stall`, ...) that produce
/// well-defined, sometimes deliberately broken, responses. Call ``shutdown()`` when done (deinit does it otherwise).
///
/// `@unchecked Sendable` is safe: the only mutable property, `isShutDown`, is accessed only
/// under `lock`; the request log and counters live in `ServerState`, which has its own lock; every
/// other stored property is an immutable `let` of a thread-safe NIO type.
public final class TestServer: @unchecked Sendable {
    /// The TCP port the server listens on, chosen by the kernel.
    public let port: Int

    private let group: MultiThreadedEventLoopGroup
    private let serverChannel: any Channel
    private let state: ServerState
    private let base: URL
    private let lock = NSLock()
    /// Guarded by `lock`: set by the first `shutdown()` so later calls (and deinit) do nothing.
    private var isShutDown = false

    /// Starts a server bound to `host` on an ephemeral port and begins serving immediately.
    ///
    /// - Parameters:
    ///   - host: The address to bind; loopback by default.
    ///   - tls: Serve HTTPS with this identity (its chain is presented); `nil` serves plain HTTP.
    ///   - clientCertificateAuthority: With `tls`, require a client certificate issued by this CA (DER).
    /// - Throws: If the socket cannot be bound or the TLS identity is unusable.
    ///   - applicationProtocols: With `tls`, the ALPN protocols the server accepts, in preference order.
    public init(host: String = "127.0.0.1", tls: TestIdentity? = nil, clientCertificateAuthority: Data? = nil,
                applicationProtocols: [String] = ["http/1.1"]) throws {
        let sslContext = try tls.map {
            try TestServer.makeTLSContext($0, clientCA: clientCertificateAuthority, protocols: applicationProtocols)
        }
        // One thread is plenty for tests and keeps every handler on a single, predictable loop.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let state = ServerState()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Nagle off: otherwise a small response on a reused connection waits ~40 ms for the
            // client's delayed ACK.
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let id = state.connectionOpened(channel)
                    channel.closeFuture.whenComplete { _ in state.connectionClosed(id) }
                    let pipeline = channel.pipeline.syncOperations
                    if let sslContext {
                        try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
                        try pipeline.addHandler(HandshakeRecorder(state: state))
                    }
                    try pipeline.configureHTTPServerPipeline()
                    let receivedHead = ReceivedHeadBox()
                    try pipeline.addHandler(RequestPreprocessor(box: receivedHead))
                    try pipeline.addHandler(
                        HTTPResponseCompressor(responseCompressionPredicate: CompressionMarker.predicate)
                    )
                    try pipeline.addHandler(
                        TestServerHandler(connectionID: id, state: state, receivedHead: receivedHead)
                    )
                }
            }
        do {
            let channel = try bootstrap.bind(host: host, port: 0).wait()
            guard let port = channel.localAddress?.port else {
                throw TestServerError.noLocalAddress
            }
            // An IPv6 literal needs brackets inside a URL.
            let urlHost = host.contains(":") ? "[\(host)]" : host
            guard let base = URL(string: "\(tls == nil ? "http" : "https")://\(urlHost):\(port)") else {
                throw TestServerError.invalidBaseURL(host)
            }
            self.serverChannel = channel
            self.port = port
            self.base = base
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        self.group = group
        self.state = state
    }

    deinit {
        shutdown()
    }

    private static func makeTLSContext(_ identity: TestIdentity, clientCA: Data?, protocols: [String]) throws -> NIOSSLContext {
        let chain = try identity.chain.map { try NIOSSLCertificate(bytes: Array($0), format: .der) }
        let key = try NIOSSLPrivateKey(bytes: Array(identity.privateKeyPEM.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.applicationProtocols = protocols
        // An idle client never answers close_notify; don't hold shutdown() for the default 5 s.
        configuration.shutdownTimeout = .milliseconds(50)
        if let clientCA {
            configuration.certificateVerification = .noHostnameVerification
            configuration.trustRoots = .certificates([try NIOSSLCertificate(bytes: Array(clientCA), format: .der)])
        }
        return try NIOSSLContext(configuration: configuration)
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

    /// Stops the server: closes the listening socket and every open connection, then shuts the
    /// event loop group down synchronously. Safe to call more than once.
    ///
    /// Must not be called from the server's own event loop (it waits for that loop).
    public func shutdown() {
        let alreadyShutDown = lock.withLock {
            defer { isShutDown = true }
            return isShutDown
        }
        guard !alreadyShutDown else { return }
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

    /// The number of TCP connections accepted so far.
    public var acceptedConnections: Int { state.acceptedConnections }

    /// The number of accepted connections that are still open.
    public var openConnections: Int { state.openConnections }
}

/// Why ``TestServer/init(host:)`` could not start.
enum TestServerError: Error, CustomStringConvertible {
    case noLocalAddress
    case invalidBaseURL(String)

    var description: String {
        switch self {
        case .noLocalAddress: return "the bound server channel has no local port"
        case .invalidBaseURL(let host): return "cannot build a URL for host \(host)"
        }
    }
}

/// Records the ALPN result of each TLS handshake (the client's offer is tested through it).
private final class HandshakeRecorder: ChannelInboundHandler, Sendable {
    typealias InboundIn = NIOAny
    private let state: ServerState

    init(state: ServerState) {
        self.state = state
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let negotiated)? = event as? TLSUserEvent {
            state.handshakeCompleted(protocol: negotiated)
        }
        context.fireUserInboundEventTriggered(event)
    }
}
