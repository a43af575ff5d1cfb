import CCurl
import CCurlShim
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The network thread's own wake-up: a non-blocking eventfd its loop polls beside curl's sockets.
///
/// An eventfd rather than a pipe: one descriptor, and one `read` empties it however many signals
/// came (a pipe needed a second read to see it empty).
///
/// libcurl's `curl_multi_wakeup` needs the socket pair `curl_multi_init` makes; a multi handle created
/// while the process is out of descriptors has none, and every later command would wait for the idle
/// poll. This channel can be made later instead: while it has no descriptor the loop polls on a short
/// timeout and tries again each turn, so a request never waits long for a thread that cannot be woken.
/// - Threading: `signal()` from any thread; `reopenIfNeeded()`, `waitDescriptor` and `drain()` on the
///   network thread. The descriptor is an atomic: it changes at most once, from -1 to a valid one, and
///   only in `reopenIfNeeded()` (at creation, then on the network thread), while every wake-up and every
///   loop turn reads it. `Sendable` as it is: its one stored property is an `Atomic`.
final class WakeupChannel: Sendable {
    /// The eventfd, or -1 while none could be made.
    private let descriptor = Atomic<Int32>(-1)

    init() {
        reopenIfNeeded()
    }

    deinit {
        let fd = descriptor.load(ordering: .acquiring)
        if fd >= 0 { close(fd) }
    }

    /// Makes the eventfd if there is none yet; false while the process has no descriptors to give.
    @discardableResult
    func reopenIfNeeded() -> Bool {
        guard descriptor.load(ordering: .acquiring) < 0 else { return true }
        // EFD_NONBLOCK and EFD_CLOEXEC are O_NONBLOCK and O_CLOEXEC (the enum does not import).
        let fd = eventfd(0, O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        // Only one thread makes descriptors, but should another ever race it, the loser's is closed.
        let (exchanged, _) = descriptor.compareExchange(expected: -1, desired: fd, ordering: .acquiringAndReleasing)
        if !exchanged { close(fd) }
        return true
    }

    /// Wakes the loop (any thread); a no-op without a descriptor (the loop's short poll covers it).
    func signal() {
        let fd = descriptor.load(ordering: .acquiring)
        guard fd >= 0 else { return }
        var one: UInt64 = 1
        _ = write(fd, &one, MemoryLayout<UInt64>.size)
    }

    /// The descriptor as a `curl_waitfd` for `curl_multi_poll`, or `nil` without one.
    var waitDescriptor: curl_waitfd? {
        let fd = descriptor.load(ordering: .acquiring)
        guard fd >= 0 else { return nil }
        return curl_waitfd(fd: fd, events: Int16(CURL_WAIT_POLLIN), revents: 0)
    }

    /// Resets the counter after the poll saw it (network thread).
    func drain() {
        let fd = descriptor.load(ordering: .acquiring)
        guard fd >= 0 else { return }
        var count: UInt64 = 0
        _ = read(fd, &count, MemoryLayout<UInt64>.size)
    }
}
