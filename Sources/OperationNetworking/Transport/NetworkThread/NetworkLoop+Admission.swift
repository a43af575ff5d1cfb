import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Admitting waiting transfers, and ending them early

extension NetworkLoop {
    /// Starts waiting transfers, oldest first, while slots are free.
    mutating func admitWaiting() {
        assertOnNetworkThread()
        while active.count < thread.activeLimit && waitingHead < waiting.count {
            let transfer = waiting[waitingHead]
            waitingHead += 1
            guard case .waiting = transfer.state.phase, !holdsForProbe(transfer) else { continue }
            start(transfer)
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead > 4096 {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    /// Gives a transfer an easy handle and puts it on curl; a failure ends the transfer.
    private mutating func start(_ transfer: Transfer) {
        // A cancel made while it waited: its command may still be in the inbox, but its request must not start.
        guard !transfer.isCancelRequested else {
            end(transfer, .cancelled)
            return
        }
        guard let easy = takeEasyHandle() else {
            end(transfer, .failed(TransportError.make(.unknown, "libcurl could not create a handle.",
                                                        url: transfer.currentRequest.url)))
            return
        }
        do {
            try transfer.admit(on: easy)
        } catch {
            recycle(easy)
            end(transfer, .failed(error))
            return
        }
        guard thread.multi.add(easy.raw) else {
            recycle(easy)
            end(transfer, .failed(TransportError.make(.unknown, "libcurl refused the transfer.",
                                                        url: transfer.currentRequest.url)))
            return
        }
        putOnCurl(transfer, easy: easy)
        probeIfUnknown(transfer)
    }

    /// Ends a transfer early (cancel, pause, stall), wherever it is. A waiting transfer stays in the
    /// FIFO and is skipped when its turn comes.
    mutating func stop(_ transfer: Transfer, with outcome: TransferOutcome) {
        assertOnNetworkThread()
        if let easy = transfer.leaveCurlEarly() {
            thread.multi.remove(easy.raw)
            takeOffCurl(transfer)
            recycle(easy)
        }
        end(transfer, outcome)
    }

    /// Fails transfers with no bytes moving for longer than their request's `timeoutInterval`, and
    /// those that waited that long without a handle (in the FIFO, or held for their origin's probe):
    /// a request's timeout runs from when it was queued, so the k-th request to a dead endpoint ends
    /// at its own timeout rather than after k of them.
    mutating func failStalled(now: UInt64) {
        assertOnNetworkThread()
        // lastActivity may lie ahead: a throttled upload counts its planned pause as activity.
        let stalled = active.filter { now > $0.latestActivity && now - $0.latestActivity > $0.timeoutNanoseconds }
        for transfer in stalled {
            let error = TransportError.make(.timedOut, "No data moved for \(transfer.currentRequest.timeoutInterval) s.",
                                            url: transfer.currentRequest.url)
            stop(transfer, with: .failed(error))
        }
        // An ended transfer stays in its list and is skipped when its turn comes (see `stop`).
        let queued = waiting[waitingHead...].filter { $0.waitedTooLong(now: now) }
            + origins.held.values.joined().filter { $0.waitedTooLong(now: now) }
        for transfer in queued {
            let error = TransportError.make(.timedOut, "The request waited \(transfer.currentRequest.timeoutInterval) s "
                                            + "without a connection.", url: transfer.currentRequest.url)
            stop(transfer, with: .failed(error))
        }
    }

    /// Puts transfers whose retry delay is over back in the FIFO (a cancel or pause during the delay
    /// already ended them: those are dropped).
    mutating func requeueDueRetries(now: UInt64) {
        assertOnNetworkThread()
        guard !delayed.isEmpty else { return }
        let due = delayed.filter { $0.at <= now }
        guard !due.isEmpty else { return }
        delayed.removeAll { $0.at <= now }
        for entry in due where entry.transfer.beginNextAttempt(now: now) {
            waiting.append(entry.transfer)
        }
    }

    /// Unpauses throttled uploads whose delay is over (`curl_easy_pause` may call the read callback).
    mutating func resumeDueUploads(now: UInt64) {
        assertOnNetworkThread()
        takeUploadsPausedByCallbacks()
        guard !pausedUploads.isEmpty else { return }
        let due = pausedUploads.filter { $0.at <= now }
        guard !due.isEmpty else { return }
        pausedUploads.removeAll { $0.at <= now }
        for entry in due {
            if let easy = entry.transfer.easy { curl_easy_pause(easy.raw, CURLPAUSE_CONT) }
        }
        // Unpausing ran the read callbacks, which may have paused an upload again.
        takeUploadsPausedByCallbacks()
    }

    /// Takes over the throttled uploads curl's read callbacks paused since the last look (see
    /// `NetworkThread.uploadsPausedByCallbacks`).
    private mutating func takeUploadsPausedByCallbacks() {
        guard !thread.uploadsPausedByCallbacks.isEmpty else { return }
        pausedUploads += thread.uploadsPausedByCallbacks
        thread.uploadsPausedByCallbacks.removeAll()
    }
}

// MARK: - The multi handle's connections (HTTP/2 sharing, idle connections, shut-down)

extension NetworkLoop {
    /// Records a transfer curl now runs, and lifts the per-host cap when it needs a connection of its
    /// own; restores the cap a run of such transfers left lifted when this one can multiplex.
    mutating func putOnCurl(_ transfer: Transfer, easy: CurlEasyHandle) {
        assertOnNetworkThread()
        transfer.activeIndex = active.count
        active.append(transfer)
        // libcurl counts a host's connections by its name, whatever socket they go over: a transfer over
        // a Unix domain socket lifts the cap, so that no other socket's connections ever hold it back.
        let serial = transfer.overUnixSocket || (transfer.tlsOrigin.map { origins.serial.contains($0) } ?? true)
        transfer.countedAsSerial = serial
        if serial {
            serialTransfers += 1
            if !hostCapLifted { setHostCap(lifted: true) }
        } else if hostCapLifted && serialTransfers == 0 {
            setHostCap(lifted: false)
        }
    }

    /// Sets `CURLMOPT_MAX_HOST_CONNECTIONS`: none while a transfer on curl needs a connection of its own
    /// (plain http, or an HTTP/1.x https origin), `multiplexedConnectionsPerHost` otherwise.
    private mutating func setHostCap(lifted: Bool) {
        thread.multi.setMaxHostConnections(lifted ? 0 : NetworkThread.multiplexedConnectionsPerHost)
        hostCapLifted = lifted
    }

    /// Forgets a transfer curl no longer runs (its handle already removed from the multi handle); learns
    /// whether its https origin is HTTP/1.x or HTTP/2; restores the per-host cap when no transfer needs
    /// its own connection any more and others still run. False when the transfer was not on curl
    /// (nothing changes then).
    @discardableResult
    mutating func takeOffCurl(_ transfer: Transfer) -> Bool {
        assertOnNetworkThread()
        let index = transfer.activeIndex
        guard index >= 0, index < active.count, active[index] === transfer else { return false }
        // The last one takes its place.
        let last = active.removeLast()
        if last !== transfer {
            active[index] = last
            last.activeIndex = index
        }
        transfer.activeIndex = -1
        if let origin = transfer.tlsOrigin,
           case let version = transfer.easy?.info(long: CURLINFO_HTTP_VERSION) ?? 0, version > 0,
           case let http1 = version < Int(CURL_HTTP_VERSION_2_0),
           !(http1 ? origins.serial : origins.multiplexing).contains(origin) {
            origins.learn(origin, http1: http1)
        }
        if transfer.countedAsSerial {
            transfer.countedAsSerial = false
            serialTransfers -= 1
            // With nothing left on curl, the cap waits for the next transfer that can multiplex
            // (`putOnCurl`): libcurl reads it only for transfers it runs, and a queue of plain requests
            // one after another then sets it once instead of twice a request.
            if serialTransfers == 0 && !active.isEmpty { setHostCap(lifted: false) }
        }
        return true
    }

    /// The transfer whose hop runs on the easy handle `raw` (one curl reported done): the handle's
    /// `CURLOPT_PRIVATE`, its callback data, names it as its owner while the handle is on curl.
    func transfer(on raw: UnsafeMutableRawPointer) -> Transfer? {
        var data: UnsafeMutableRawPointer?
        guard ccurl_easy_getinfo_ptr(raw, CURLINFO_PRIVATE, &data) == CURLE_OK, let owner = callbackOwner(data) else { return nil }
        // `active` holds the transfer while its handle is on curl, so the unretained pointer is alive.
        return Unmanaged<Transfer>.fromOpaque(owner).takeUnretainedValue()
    }

    /// Frees what the thread owns in libcurl once its loop ended: the pooled easy handles, the multi
    /// handle (with the connections it keeps and its wake-up socket pair) and the share handle.
    mutating func releaseHandles() {
        assertOnNetworkThread()
        for transfer in active {
            guard let easy = transfer.easy else { continue }
            thread.multi.remove(easy.raw)
            // A transfer still on curl keeps its handle past this point: it must not point at the share.
            if thread.share != nil { _ = ccurl_easy_setopt_ptr(easy.raw, CURLOPT_SHARE, nil) }
            transfer.activeIndex = -1
        }
        active.removeAll()
        pool.removeAll()   // their last references: each deinit calls curl_easy_cleanup
        thread.multi.shutDown()
        // Refused (CURLSHE_IN_USE) while an easy handle still uses it, which none does by now.
        if let share = thread.share { curl_share_cleanup(share) }
    }

    /// Shuts down the idle connections their peers closed, also while transfers run, and with nothing
    /// running closes every idle connection once the idle lifetime is over (see `IdleConnections`):
    /// libcurl closes a multi handle's connections only when asked for a new one or when the handle
    /// goes, so for the lifetime the handle is made again (TLS sessions stay in the share handle).
    mutating func closeIdleConnectionsIfDue(now: UInt64) {
        assertOnNetworkThread()
        guard active.isEmpty, waitingHead >= waiting.count, delayed.isEmpty, pausedUploads.isEmpty else {
            thread.idleConnections.busy(now: now) { localPortsInUse() }
            return
        }
        guard thread.idleConnections.idle(now: now, lifetime: thread.idleConnectionLifetime), thread.multi.replace() else { return }
        serialTransfers = 0
        hostCapLifted = false   // a fresh multi handle starts capped
    }
}

extension NetworkLoop {
    /// The local ports of the connections the transfers on curl run on (0, left out, for one that has
    /// none yet: libcurl clears the port when a hop starts and sets it once the hop has a connection).
    /// A Unix domain socket has no port: while a transfer runs over one, the set holds -1, which no
    /// socket has, so that it is not empty and every socket without a port is spared.
    func localPortsInUse() -> Set<Int> {
        var ports = Set<Int>()
        for transfer in active {
            if transfer.overUnixSocket {
                ports.insert(-1)
            } else if let port = transfer.easy?.info(long: CURLINFO_LOCAL_PORT), port > 0 {
                ports.insert(port)
            }
        }
        return ports
    }
}

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
/// - Threading: network thread only (part of `NetworkLoop`), like the loop's other state.
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

extension NetworkLoop {
    /// Holds `transfer` back when its request goes to an https origin being probed (see
    /// `OriginProtocols`); false when it may start now.
    mutating func holdsForProbe(_ transfer: Transfer) -> Bool {
        guard !origins.probes.isEmpty,
              let origin = Transfer.tlsOrigin(of: transfer.currentRequest.url, unixSocketPath: transfer.settings.unixSocketPath),
              origins.probes[origin] != nil else { return false }
        origins.held[origin, default: []].append(transfer)
        return true
    }

    /// Makes `transfer`, just configured for its first hop, the probe of its https origin when nothing
    /// is known of that origin and no other transfer probes it.
    mutating func probeIfUnknown(_ transfer: Transfer) {
        assertOnNetworkThread()
        guard let origin = transfer.tlsOrigin, !origins.knows(origin), origins.probes[origin] == nil else { return }
        origins.probes[origin] = transfer
    }

    /// Learns what each probed origin speaks once its probe's handshake said so, and lets the
    /// transfers held for it go (to the FIFO's end, in the order they came). Called after each
    /// `curl_multi_perform` while a probe runs.
    mutating func learnProbedOrigins() {
        assertOnNetworkThread()
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
    /// `host:port` of `url` when it goes over https (as a hop's `tlsOrigin` is spelled), else `nil`;
    /// over a Unix domain socket (`unixSocketPath`, or an `https+unix` URL), the socket's path first.
    static func tlsOrigin(of url: URL?, unixSocketPath: String? = nil) -> String? {
        guard let url else { return nil }
        let socket = try? UnixSocketRoute.route(for: url, configured: unixSocketPath)
        let wireURL = socket?.url ?? url
        guard wireURL.scheme?.lowercased() == "https", let host = wireURL.host(percentEncoded: true), !host.isEmpty else {
            return nil
        }
        return Transfer.tlsOrigin(host: host, port: wireURL.port, socket: socket?.socketPath)
    }

    /// `host:port` of an https origin: the host as the URL writes it, lowercased; 443 when no port is
    /// given. Over a Unix domain socket it starts with `unix:` and the socket's path, so that two
    /// sockets whose requests name the same host are two origins (probed, capped and shared apart):
    /// a path may hold any byte but NUL, so its length comes first and no path reads as another.
    static func tlsOrigin(host: String, port: Int?, socket: String? = nil) -> String {
        let origin = "\(host.lowercased()):\(port ?? 443)"
        guard let socket else { return origin }
        return "unix:\(socket.utf8.count):\(socket) \(origin)"
    }
}
