import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of two servers, as one host and port whose server changed between
/// connections: the first connection goes to port `first`, every later one to port `later`. Once
/// `resetFirstConnectionOnNextBytes()` was called, the first connection is reset (RST, nothing
/// forwarded) as soon as the client writes on it again: the client sent its request on a kept-alive
/// connection the server dropped.
/// - Threading: the accept loop and each connection run on threads of their own (one thread a
///   connection, moving bytes both ways with `poll`); `lock` guards the counters and the flag.
final class SwitchingRelay: @unchecked Sendable {
    let port: Int
    private let first: Int
    private let later: Int
    private let lock = NSLock()
    private var listener: Int32                 // guarded by lock
    private var accepted = 0                    // guarded by lock
    private var resetArmed = false              // guarded by lock
    private var resets = 0                      // guarded by lock

    /// Listens on an ephemeral port; `nil` if the socket cannot be made.
    init?(first: Int, later: Int) {
        self.first = first
        self.later = later
        guard let (fd, port) = SwitchingRelay.listen() else { return nil }
        listener = fd
        self.port = port
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "SwitchingRelay"
        thread.start()
    }

    /// Connections accepted so far.
    var connections: Int { lock.withLock { accepted } }
    /// Times the first connection was reset.
    var resetCount: Int { lock.withLock { resets } }

    /// From now on, the next bytes the client writes on the first connection reset it.
    func resetFirstConnectionOnNextBytes() {
        lock.withLock { resetArmed = true }
    }

    /// Stops accepting (the accept loop's next `accept` fails and the loop closes the socket).
    func stop() {
        let fd = lock.withLock { () -> Int32 in
            defer { listener = -1 }
            return listener
        }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { break }
            let index = lock.withLock { () -> Int in
                accepted += 1
                return accepted
            }
            let thread = Thread { [self] in relay(client, isFirst: index == 1) }
            thread.start()
        }
        close(fd)
    }

    /// Moves bytes between the client and its server until either side closes (or the reset).
    private func relay(_ client: Int32, isFirst: Bool) {
        let upstream = SwitchingRelay.connect(to: isFirst ? first : later)
        guard upstream >= 0 else {
            close(client)
            return
        }
        var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0), pollfd(fd: upstream, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        loop: while poll(&fds, 2, 30_000) > 0 {
            for (index, from) in [client, upstream].enumerated() where fds[index].revents != 0 {
                let count = read(from, &buffer, buffer.count)
                guard count > 0 else { break loop }
                if from == client && isFirst && lock.withLock({ resetArmed }) {
                    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                    setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                    lock.withLock {
                        resetArmed = false
                        resets += 1
                    }
                    break loop
                }
                guard SwitchingRelay.writeAll(buffer, count: count, to: from == client ? upstream : client) else { break loop }
            }
        }
        close(client)
        close(upstream)
    }

    private static func writeAll(_ bytes: [UInt8], count: Int, to fd: Int32) -> Bool {
        var offset = 0
        while offset < count {
            let written = bytes[offset..<count].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    private static func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private static func listen() -> (Int32, Int)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = SwitchingRelay.address(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ready, Glibc.listen(fd, 16) == 0 else {
            close(fd)
            return nil
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    private static func connect(to port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var address = SwitchingRelay.address(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            return -1
        }
        return fd
    }
}
