import CNetlink
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads the routing state through netlink and watches it change, on a thread of its own.
///
/// The thread sleeps in `poll` on a netlink socket subscribed to link, address and route changes and
/// on a pipe that `stop()` writes to; every change triggers a fresh dump (link, address, route) and a
/// new status, handed to `onStatus` only when it differs. No polling loop, no busy wait.
/// - Threading: `start`/`stop` from any thread; the rest runs on the monitor thread. What both share
///   lives behind the monitor's lock.
final class NetlinkMonitor: Sendable {
    private struct State {
        var stopped = false
        /// The pipe end `stop()` writes to; -1 before `start()` and after `stop()`.
        var wakeWrite: Int32 = -1
    }

    private let state = Protected(State())
    private let compute: @Sendable (RoutingSnapshot) -> ReachabilityState
    private let onStatus: @Sendable (ReachabilityState) -> Void

    init(compute: @escaping @Sendable (RoutingSnapshot) -> ReachabilityState,
         onStatus: @escaping @Sendable (ReachabilityState) -> Void) {
        self.compute = compute
        self.onStatus = onStatus
    }

    /// Opens the sockets and starts the thread; false (nothing left open) when netlink is unavailable.
    func start() -> Bool {
        let watch = cnetlink_open(cnetlink_watch_groups())
        guard watch >= 0 else { return false }
        var pipeEnds: [Int32] = [-1, -1]
        guard cnetlink_pipe(&pipeEnds) == 0 else {
            close(watch)
            return false
        }
        let wakeWrite = pipeEnds[1]
        state.withLock { $0.wakeWrite = wakeWrite }
        let wakeRead = pipeEnds[0]
        let thread = Thread { [self] in run(watch: watch, wake: wakeRead) }
        thread.name = "OperationNetworking.reachability"
        thread.start()
        return true
    }

    /// Stops the thread; it closes its sockets as it leaves.
    func stop() {
        let fd: Int32 = state.withLock {
            $0.stopped = true
            let fd = $0.wakeWrite
            $0.wakeWrite = -1
            return fd
        }
        guard fd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
        close(fd)
    }

    /// One dump of links, addresses and routes, or `nil` when netlink cannot be read.
    static func snapshot() -> RoutingSnapshot? {
        let fd = cnetlink_open(0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var snapshot = RoutingSnapshot()
        for (sequence, type) in [UInt16(CNETLINK_GETLINK), UInt16(CNETLINK_GETADDR), UInt16(CNETLINK_GETROUTE)].enumerated() {
            guard cnetlink_request_dump(fd, type, UInt32(sequence + 1)) == 0 else { return nil }
            guard readDump(fd, into: &snapshot) else { return nil }
        }
        return snapshot
    }

    // MARK: - Monitor thread

    private func run(watch: Int32, wake: Int32) {
        defer {
            close(watch)
            close(wake)
        }
        var last: ReachabilityState?
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !state.withLock({ $0.stopped }) {
            let status = NetlinkMonitor.snapshot().map(compute) ?? .unknown
            if status != last {
                last = status
                onStatus(status)
            }
            var fds = [pollfd(fd: watch, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, -1) >= 0 || errno == EINTR else { return }
            if fds[1].revents != 0 { return }
            // Drain every queued change; one fresh dump covers them all.
            while recv(watch, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
        }
    }

    /// Reads a dump's replies until NLMSG_DONE.
    private static func readDump(_ fd: Int32, into snapshot: inout RoutingSnapshot) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let deadline = Date().addingTimeInterval(2)
        while Date() < deadline {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 1, 500) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return false }
            for message in RoutingSnapshot.messages(in: Array(buffer[0..<count])) {
                if message.type == UInt16(CNETLINK_DONE) { return true }
                if message.type == UInt16(CNETLINK_ERROR) { return false }
                snapshot.apply(message)
            }
        }
        return false
    }
}
