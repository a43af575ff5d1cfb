import CCurl
import CCurlShim
import Foundation

// MARK: - Network thread: the multi handle's connections (HTTP/2 sharing, idle connections, shut-down)

extension NetworkThread {
    /// Records a transfer curl now runs, and lifts the per-host cap when it needs a connection of its
    /// own; restores the cap a run of such transfers left lifted when this one can multiplex.
    func putOnCurl(_ transfer: Transfer, easy: CurlEasyHandle) {
        transfer.activeIndex = active.count
        active.append(transfer)
        let serial = transfer.tlsOrigin.map { origins.serial.contains($0) } ?? true
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
    private func setHostCap(lifted: Bool) {
        multi.setMaxHostConnections(lifted ? 0 : NetworkThread.multiplexedConnectionsPerHost)
        hostCapLifted = lifted
    }

    /// Forgets a transfer curl no longer runs (its handle already removed from the multi handle); learns
    /// whether its https origin is HTTP/1.x or HTTP/2; restores the per-host cap when no transfer needs
    /// its own connection any more and others still run. False when the transfer was not on curl
    /// (nothing changes then).
    @discardableResult
    func takeOffCurl(_ transfer: Transfer) -> Bool {
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
    func releaseHandles() {
        for transfer in active {
            guard let easy = transfer.easy else { continue }
            multi.remove(easy.raw)
            // A transfer still on curl keeps its handle past this point: it must not point at the share.
            if share != nil { _ = ccurl_easy_setopt_ptr(easy.raw, CURLOPT_SHARE, nil) }
            transfer.activeIndex = -1
        }
        active.removeAll()
        pool.removeAll()   // their last references: each deinit calls curl_easy_cleanup
        multi.shutDown()
        // Refused (CURLSHE_IN_USE) while an easy handle still uses it, which none does by now.
        if let share { curl_share_cleanup(share) }
    }

    /// Shuts down the idle connections their peers closed, also while transfers run, and with nothing
    /// running closes every idle connection once the idle lifetime is over (see `IdleConnections`):
    /// libcurl closes a multi handle's connections only when asked for a new one or when the handle
    /// goes, so for the lifetime the handle is made again (TLS sessions stay in the share handle).
    func closeIdleConnectionsIfDue(now: UInt64) {
        guard active.isEmpty, waitingHead >= waiting.count, delayed.isEmpty, pausedUploads.isEmpty else {
            idleConnections.busy(now: now) { localPortsInUse() }
            return
        }
        guard idleConnections.idle(now: now, lifetime: idleConnectionLifetime), multi.replace() else { return }
        serialTransfers = 0
        hostCapLifted = false   // a fresh multi handle starts capped
    }
}

extension NetworkThread {
    /// The local ports of the connections the transfers on curl run on (0, left out, for one that has
    /// none yet: libcurl clears the port when a hop starts and sets it once the hop has a connection).
    func localPortsInUse() -> Set<Int> {
        var ports = Set<Int>()
        for transfer in active {
            if let port = transfer.easy?.info(long: CURLINFO_LOCAL_PORT), port > 0 { ports.insert(port) }
        }
        return ports
    }
}
