import CCurl
import CCurlShim
import Foundation

/// The sockets of the connections a network thread's multi handle holds, and when its idle
/// connections are due to be closed: once no transfer has run for the idle lifetime, or as soon as a
/// peer closed one (its socket then sits in CLOSE-WAIT until closed). libcurl itself looks at idle
/// connections only when a new request needs one, so without traffic they would stay open.
/// - Threading: network thread only (owned by `NetworkThread`; the socket callbacks run there).
final class IdleConnections {
    /// Descriptors of the connections curl opened and has not closed.
    private(set) var sockets: Set<Int32> = []
    /// Since when nothing ran (`nil` while something runs).
    private var idleSince: UInt64?
    /// When the sockets were last looked at.
    private var lastCheck: UInt64 = 0
    /// `POLLRDHUP` (the peer shut its side down), which Glibc's module leaves out without _GNU_SOURCE.
    private static let pollReadHangUp: Int16 = 0x2000
    /// How often an idle thread looks at its sockets.
    static let checkInterval: UInt64 = 1_000_000_000

    /// Transfers ended since glibc last gave freed memory back.
    private var endedSinceTrim = 0
    /// After this many transfers, an idle thread asks glibc to give freed memory back.
    static let trimAfterTransfers = 1_000

    func opened(_ socket: Int32) { sockets.insert(socket) }
    func closed(_ socket: Int32) { sockets.remove(socket) }

    /// Something runs: the idle clock stops.
    func busy() { idleSince = nil }

    /// A transfer ended.
    func transferEnded() { endedSinceTrim &+= 1 }

    /// Nothing runs at `now`. After a busy stretch (a queue of thousands drained) and a second of
    /// quiet, gives the memory glibc kept for reuse back to the system, so a daemon's resident size
    /// falls back after a burst instead of staying at its peak. Returns whether the idle connections
    /// should be closed now: idle for `lifetime` seconds, or one of them closed by its peer (looked
    /// at once a second).
    func idle(now: UInt64, lifetime: Int) -> Bool {
        let since = idleSince ?? now
        idleSince = since
        let quiet = now &- since
        if endedSinceTrim >= IdleConnections.trimAfterTransfers && quiet >= IdleConnections.checkInterval {
            endedSinceTrim = 0
            malloc_trim(0)
        }
        guard !sockets.isEmpty, now &- lastCheck >= IdleConnections.checkInterval else { return false }
        lastCheck = now
        return quiet >= UInt64(max(lifetime, 0)) * 1_000_000_000 || anyClosedByPeer()
    }

    /// Whether an idle connection's socket is readable or hung up: an idle HTTP connection has
    /// nothing to read unless its peer closed it.
    private func anyClosedByPeer() -> Bool {
        var descriptors = sockets.map { pollfd(fd: $0, events: Int16(POLLIN) | IdleConnections.pollReadHangUp, revents: 0) }
        guard poll(&descriptors, nfds_t(descriptors.count), 0) > 0 else { return false }
        return descriptors.contains { $0.revents != 0 }
    }
}

/// `CURLOPT_CLOSESOCKETFUNCTION`: closes a connection's socket and tells its network thread (the
/// callback data is the thread, which outlives every connection of its multi handle).
let curlCloseSocketCallback: curl_closesocket_callback = { clientp, socket in
    if let clientp {
        Unmanaged<NetworkThread>.fromOpaque(clientp).takeUnretainedValue().idleConnections.closed(socket)
    }
    return close(socket)
}
