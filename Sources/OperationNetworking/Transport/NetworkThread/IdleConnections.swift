import CCurl
import CCurlShim
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The sockets of the connections a network thread's multi handle holds, and when its idle
/// connections are due to be closed: all of them once no transfer has run for the idle lifetime;
/// one whose peer closed it (its socket would sit in CLOSE-WAIT) within a second or so, alone, whether
/// or not other transfers run. libcurl itself looks at idle connections only when a new request needs
/// one, so without new requests they would stay open.
///
/// After a busy stretch it can also ask glibc to give freed memory back, when the process opted in
/// (`trimsMemory`, see `MallocThresholds`); by default it leaves the allocator alone.
/// - Threading: network thread only (owned by `NetworkThread`; the socket callbacks run there), so it
///   needs no lock.
final class IdleConnections {
    /// Descriptors of the connections curl opened and has not closed.
    private(set) var sockets: Set<Int32> = []
    /// Those of `sockets` this thread shut down after their peer closed them: curl still holds them
    /// (it closes each when its next connection lookup finds it dead), so they are not looked at again.
    private var shutDown: Set<Int32> = []
    /// Since when nothing ran (`nil` while something runs).
    private var idleSince: UInt64?
    /// When the sockets were last looked at.
    private var lastCheck: UInt64 = 0
    /// `POLLRDHUP` (the peer shut its side down), which Glibc's module leaves out without _GNU_SOURCE.
    private static let pollReadHangUp: Int16 = 0x2000
    /// How often an idle thread looks at its sockets.
    static let checkInterval: UInt64 = 1_000_000_000

    /// Whether an idle thread asks glibc to give freed memory back (the process opted in).
    let trimsMemory: Bool
    /// Transfers ended since glibc last gave freed memory back.
    private var endedSinceTrim = 0
    /// After this many transfers, an idle thread asks glibc to give freed memory back.
    static let trimAfterTransfers = 1_000
    /// Times glibc was asked to give freed memory back.
    private(set) var trims = 0

    init(trimsMemory: Bool) {
        self.trimsMemory = trimsMemory
    }

    func opened(_ socket: Int32) { sockets.insert(socket) }
    func closed(_ socket: Int32) {
        sockets.remove(socket)
        shutDown.remove(socket)
    }

    /// Something runs at `now`: the idle clock stops. Once a second, shuts down each connection its
    /// peer closed that no transfer runs on: `localPortsInUse` names the local ports of the connections
    /// transfers run on (asked only when some peer closed one).
    func busy(now: UInt64, localPortsInUse: () -> Set<Int>) {
        idleSince = nil
        guard !sockets.isEmpty, now &- lastCheck >= IdleConnections.checkInterval else { return }
        lastCheck = now
        shutDownClosedByPeer(sparing: localPortsInUse)
    }

    /// A transfer ended.
    func transferEnded() { endedSinceTrim &+= 1 }

    /// Nothing runs at `now`. With `trimsMemory`, after a busy stretch (a queue of thousands drained)
    /// and a second of quiet, gives the memory glibc kept for reuse back to the system, so a daemon's
    /// resident size falls back after a burst instead of staying at its peak. Once a second, shuts down each idle
    /// connection its peer closed. Returns whether every idle connection should be closed now (idle
    /// for `lifetime` seconds).
    func idle(now: UInt64, lifetime: Int) -> Bool {
        let since = idleSince ?? now
        idleSince = since
        let quiet = now &- since
        if trimsMemory && endedSinceTrim >= IdleConnections.trimAfterTransfers && quiet >= IdleConnections.checkInterval {
            endedSinceTrim = 0
            trims += 1
            malloc_trim(0)
        }
        guard !sockets.isEmpty, now &- lastCheck >= IdleConnections.checkInterval else { return false }
        lastCheck = now
        if quiet >= UInt64(max(lifetime, 0)) * 1_000_000_000 { return true }
        shutDownClosedByPeer()
        return false
    }

    /// Shuts down the sockets whose peer hung up, one by one. Only those: a peer closing one
    /// connection says nothing of the others (to other hosts, or other connections to the same one),
    /// which stay ready for reuse. `shutdown` answers the peer's FIN at once, so the socket leaves
    /// CLOSE-WAIT, while its descriptor stays curl's to close; curl finds it dead (readable at EOF)
    /// the next time it looks for a connection and closes it then. A socket that is only readable
    /// (an HTTP/2 peer's PING or SETTINGS) is left alone, and so is one whose local port `sparing`
    /// names: a transfer still reads what its peer sent before closing.
    private func shutDownClosedByPeer(sparing: () -> Set<Int> = { [] }) {
        var descriptors = sockets.subtracting(shutDown).map {
            pollfd(fd: $0, events: IdleConnections.pollReadHangUp, revents: 0)
        }
        guard !descriptors.isEmpty, poll(&descriptors, nfds_t(descriptors.count), 0) > 0 else { return }
        let hungUp = IdleConnections.pollReadHangUp | Int16(POLLHUP) | Int16(POLLERR)
        var inUse: Set<Int>?
        for descriptor in descriptors where descriptor.revents & hungUp != 0 {
            let ports = inUse ?? sparing()
            inUse = ports
            if !ports.isEmpty {
                // A port that cannot be read may be in use: the socket is left for the next look.
                guard let port = IdleConnections.localPort(of: descriptor.fd), !ports.contains(port) else { continue }
            }
            shutdown(descriptor.fd, Int32(SHUT_RDWR))
            shutDown.insert(descriptor.fd)
        }
    }

    /// The local port `socket` is bound to (IPv4 or IPv6), or `nil` if it cannot be read.
    private static func localPort(of socket: Int32) -> Int? {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let read = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) == 0 }
        }
        guard read else { return nil }
        switch Int32(address.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default:
            return nil
        }
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

/// Allocator tuning for processes that ask for it: off by default, because the host process's
/// allocator belongs to its owner.
///
/// Opt in by starting the process with `OPERATIONNETWORKING_MALLOC_TUNING=1` in its environment (read
/// once, when the network thread starts). The network thread then does two things it otherwise never
/// does:
/// - Before its first transfer, it moves glibc's dynamic malloc thresholds once (`settled`), so that
///   libcurl's per-transfer buffers stop costing page faults.
/// - When it goes idle after a busy stretch (`IdleConnections.trimAfterTransfers` transfers), it calls
///   `malloc_trim(0)`, so that a daemon's resident size falls back after a burst.
///
/// Why the thresholds: libcurl 7.88 allocates a receive buffer (`Transfer.receiveBufferSize`) for every
/// transfer and an upload buffer for every transfer with a body, and frees both when the transfer
/// ends. glibc gives the top of a heap back to the kernel (`madvise(MADV_DONTNEED)`) when a free leaves
/// more than its trim threshold there: 128 KiB, until the process first frees a block larger than that
/// which it had `mmap`ed, after which it is twice that block's size. Whether the buffers land at the
/// top of the network thread's heap depends on the layout of the moment, so in some processes every
/// transfer returned their pages and faulted them in again. Allocating and freeing one 4 MiB block
/// puts glibc where it would be after any program has handled a 4 MiB buffer: blocks up to 4 MiB come
/// from the heap, and a heap keeps up to 8 MiB free at its top. No setting is forced (`mallopt` would
/// also switch the dynamic thresholds off); on another C library this is one allocation and nothing
/// more.
/// - Threading: any thread; its statics are `let`s, each set once per process (`settled` allocates once).
enum MallocThresholds {
    /// The environment variable that opts the process in, with the value `1`.
    static let environmentVariable = "OPERATIONNETWORKING_MALLOC_TUNING"

    /// Whether the process opted in; read from the environment once.
    static let optedIn = isOptIn(ProcessInfo.processInfo.environment[environmentVariable])

    /// Whether `value`, the environment variable's, opts in: only `1` does.
    static func isOptIn(_ value: String?) -> Bool {
        value == "1"
    }

    /// Done once per process, before the first transfer of a thread that tunes the allocator.
    static let settled: Void = {
        #if canImport(Glibc)
        guard let block = malloc(4 << 20) else { return }
        // An outside call that sees the pointer keeps the optimiser from removing the pair.
        _ = malloc_usable_size(block)
        free(block)
        #endif
    }()
}
