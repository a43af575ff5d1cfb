import CCurl
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The network thread's own wake-up: a non-blocking pipe whose read end its loop polls beside curl's
/// sockets.
///
/// libcurl's `curl_multi_wakeup` needs the socket pair `curl_multi_init` makes; a multi handle created
/// while the process is out of descriptors has none, and every later command would wait for the idle
/// poll. This channel can be made later instead: while it has no descriptor the loop polls on a short
/// timeout and tries again each turn, so a request never waits long for a thread that cannot be woken.
/// - Threading: `signal()` from any thread; `reopenIfNeeded()`, `waitDescriptor` and `drain()` on the
///   network thread. The descriptors are guarded by `lock` (they change once, from -1 to valid ones).
final class WakeupChannel: @unchecked Sendable {
    private let lock = NSLock()
    private var readEnd: Int32 = -1    // guarded by lock
    private var writeEnd: Int32 = -1   // guarded by lock

    init() {
        reopenIfNeeded()
    }

    deinit {
        if readEnd >= 0 { close(readEnd) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// Makes the pipe if there is none yet; false while the process has no descriptors to give.
    @discardableResult
    func reopenIfNeeded() -> Bool {
        lock.withLock {
            guard readEnd < 0 else { return true }
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { return false }
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)   // a full pipe is awake enough
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
            (readEnd, writeEnd) = (ends[0], ends[1])
            return true
        }
    }

    /// Wakes the loop (any thread); a no-op without a pipe (the loop's short poll covers it).
    func signal() {
        let fd = lock.withLock { writeEnd }
        guard fd >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(fd, &byte, 1)
    }

    /// The read end as a `curl_waitfd` for `curl_multi_poll`, or `nil` without a pipe.
    var waitDescriptor: curl_waitfd? {
        let fd = lock.withLock { readEnd }
        guard fd >= 0 else { return nil }
        return curl_waitfd(fd: fd, events: Int16(CURL_WAIT_POLLIN), revents: 0)
    }

    /// Empties the pipe after the poll saw it (network thread).
    func drain() {
        let fd = lock.withLock { readEnd }
        guard fd >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(fd, &buffer, buffer.count) > 0 {}
    }
}
