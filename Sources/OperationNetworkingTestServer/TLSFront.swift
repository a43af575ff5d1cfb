import CTestTLS
import Foundation
import NIOConcurrencyHelpers

/// The TLS side of an HTTPS ``TestServer``: `CTestTLS`'s front, over the system's OpenSSL. It accepts
/// TLS 1.2 and 1.3 on its own port (ephemeral unless given) and relays each connection's plaintext, both ways and
/// closes included, over one connection of its own to the server's plain HTTP listener on 127.0.0.1
/// (one to one, so the server's connection counts stay true). Each handshake is reported to `state`.
///
/// `@unchecked Sendable` for the C front's pointer, which its own threads use and `stop()` ends once;
/// whether it was stopped is owned by a lock, and the other properties are immutable.
final class TLSFront: @unchecked Sendable {
    /// The port clients connect to.
    let port: Int

    private let front: OpaquePointer
    /// Retained for the front's threads, which report handshakes to it; released once they have ended.
    private let observed: Unmanaged<ServerState>
    /// Set by the first `stop()`.
    private let isStopped = NIOLockedValueBox(false)

    /// Starts accepting on `host` and `port` (0: the kernel's choice), presenting `identity`'s chain (see
    /// ``TestServer/init(host:port:tls:clientCertificateAuthority:applicationProtocols:)``).
    init(host: String, port: Int, backendPort: Int, identity: TestIdentity, clientCertificateAuthority: Data?,
         applicationProtocols: [String], state: ServerState) throws {
        let chain = identity.chain.reduce(into: [UInt8]()) { $0.append(contentsOf: $1) }
        let authority = clientCertificateAuthority.map { Array($0) } ?? []
        let alpn = try TLSFront.wireFormat(applicationProtocols)
        let observed = Unmanaged.passRetained(state)
        var reason = [CChar](repeating: 0, count: 512)
        let started = ctt_front_start(
            host, Int32(port), Int32(backendPort), chain, chain.count, identity.privateKeyPEM, authority, authority.count,
            alpn, alpn.count,
            { context, completed, name in
                guard let context else { return }
                Unmanaged<ServerState>.fromOpaque(context).takeUnretainedValue()
                    .handshakeEnded(completed: completed != 0, protocol: name.map { String(cString: $0) })
            },
            observed.toOpaque(), &reason, reason.count)
        guard let started else {
            observed.release()
            let message = String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw TestServerError.tlsUnavailable(message)
        }
        self.front = started
        self.observed = observed
        self.port = Int(ctt_front_port(started))
    }

    deinit {
        stop()
    }

    /// Closes the listener and every connection and waits for the front's threads. Safe to call more than once.
    func stop() {
        let alreadyStopped = isStopped.withLockedValue { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        ctt_front_stop(front)
        observed.release()
    }

    /// `protocols` in ALPN's wire format: each name preceded by its length.
    private static func wireFormat(_ protocols: [String]) throws -> [UInt8] {
        try protocols.reduce(into: [UInt8]()) { wire, name in
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else { throw TestServerError.invalidApplicationProtocol(name) }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
    }
}
