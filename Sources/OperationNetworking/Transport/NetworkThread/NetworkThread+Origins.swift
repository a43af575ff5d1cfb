import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a network thread knows of the protocol of each https origin, and the first burst to an origin
/// it does not know yet.
///
/// The per-host cap (`NetworkThread.multiplexedConnectionsPerHost`) keeps a burst to an HTTP/2 origin
/// on few connections, and must never apply to an HTTP/1.x one. An origin not seen before is neither:
/// its first request goes alone (the probe), and the others to it wait, in order, until the probe's
/// TLS handshake says what the server speaks (ALPN). Then they follow at once: sharing the probe's
/// connection when it is HTTP/2, one connection each when it is HTTP/1.x. A probe that ends, or moves
/// to another origin, before its handshake said anything lets them go too, and the first of them
/// probes next.
/// - Threading: network thread only (a `NetworkThread` property), like the loop's other state.
struct OriginProtocols {
    /// https origins (`host:port`) whose connections turned out HTTP/1.x: they cannot multiplex.
    var serial: Set<String> = []
    /// https origins whose connections turned out HTTP/2.
    var multiplexing: Set<String> = []
    /// Origins whose first connection is being made, with the transfer making it.
    var probes: [String: Transfer] = [:]
    /// Transfers to a probed origin held back until its protocol is known, oldest first.
    var held: [String: [Transfer]] = [:]

    /// Origins remembered at most, each way; past that the set starts over (an origin forgotten is
    /// probed again).
    private static let capacity = 4096

    /// Whether `origin`'s protocol is known.
    func knows(_ origin: String) -> Bool {
        serial.contains(origin) || multiplexing.contains(origin)
    }

    /// Records what `origin` speaks.
    mutating func learn(_ origin: String, http1: Bool) {
        if http1 {
            multiplexing.remove(origin)
            if serial.count >= OriginProtocols.capacity { serial.removeAll() }
            serial.insert(origin)
        } else {
            serial.remove(origin)
            if multiplexing.count >= OriginProtocols.capacity { multiplexing.removeAll() }
            multiplexing.insert(origin)
        }
    }

    /// Transfers held back, all origins together.
    var heldCount: Int { held.values.reduce(0) { $0 + $1.count } }
}

extension NetworkThread {
    /// Holds `transfer` back when its request goes to an https origin being probed (see
    /// `OriginProtocols`); false when it may start now.
    func holdsForProbe(_ transfer: Transfer) -> Bool {
        guard !origins.probes.isEmpty, let origin = Transfer.tlsOrigin(of: transfer.currentRequest.url),
              origins.probes[origin] != nil else { return false }
        origins.held[origin, default: []].append(transfer)
        return true
    }

    /// Makes `transfer`, just configured for its first hop, the probe of its https origin when nothing
    /// is known of that origin and no other transfer probes it.
    func probeIfUnknown(_ transfer: Transfer) {
        guard let origin = transfer.tlsOrigin, !origins.knows(origin), origins.probes[origin] == nil else { return }
        origins.probes[origin] = transfer
    }

    /// Learns what each probed origin speaks once its probe's handshake said so, and lets the
    /// transfers held for it go (to the FIFO's end, in the order they came). Called after each
    /// `curl_multi_perform` while a probe runs.
    func learnProbedOrigins() {
        for (origin, probe) in origins.probes {
            if let easy = probe.easy, probe.tlsOrigin == origin {
                guard let http1 = easy.negotiatedHTTP1 else { continue }   // handshake not done yet
                origins.learn(origin, http1: http1)
            }
            origins.probes[origin] = nil
            for transfer in origins.held.removeValue(forKey: origin) ?? [] {
                if case .waiting = transfer.state.phase { waiting.append(transfer) }
            }
        }
    }
}

extension Transfer {
    /// `host:port` of `url` when it is https (as a hop's `tlsOrigin` is spelled), else `nil`.
    static func tlsOrigin(of url: URL?) -> String? {
        guard let url, url.scheme?.lowercased() == "https", let host = url.host(percentEncoded: true), !host.isEmpty else {
            return nil
        }
        return tlsOrigin(host: host, port: url.port)
    }

    /// `host:port` of an https origin: the host as the URL writes it, lowercased; 443 when no port is given.
    static func tlsOrigin(host: String, port: Int?) -> String {
        "\(host.lowercased()):\(port ?? 443)"
    }
}

extension CurlEasyHandle {
    /// OpenSSL's `SSL_get0_alpn_selected`, found at run time in the libssl libcurl loaded: the
    /// library's own C targets do not link it for this, and without it (another TLS library) an origin
    /// is learned only when its first response ends.
    private typealias ALPNSelected = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                                                      UnsafeMutablePointer<UInt32>?) -> Void
    private static let alpnSelected: ALPNSelected? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "SSL_get0_alpn_selected") else { return nil }
        return unsafeBitCast(symbol, to: ALPNSelected.self)
    }()

    /// Whether the TLS connection this handle's hop runs on speaks HTTP/1.x (true) or HTTP/2 (false),
    /// as its handshake settled it (ALPN; a handshake that chose nothing means HTTP/1.1); `nil` while
    /// the handshake is under way or when it cannot be told.
    var negotiatedHTTP1: Bool? {
        var pointer: UnsafeMutableRawPointer?
        guard let select = CurlEasyHandle.alpnSelected,
              ccurl_easy_getinfo_ptr(raw, CURLINFO_TLS_SSL_PTR, &pointer) == CURLE_OK, let pointer else { return nil }
        let session = pointer.assumingMemoryBound(to: curl_tlssessioninfo.self).pointee
        guard session.backend == CURLSSLBACKEND_OPENSSL, let ssl = session.internals else { return nil }
        var name: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        select(OpaquePointer(ssl), &name, &length)
        guard let name, length > 0 else {
            return info(offset: CURLINFO_APPCONNECT_TIME_T) > 0 ? true : nil
        }
        return !(length == 2 && name[0] == UInt8(ascii: "h") && name[1] == UInt8(ascii: "2"))
    }
}
