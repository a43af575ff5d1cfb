import CCurl
import CCurlShim
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The lifecycle of a network thread's curl multi handle.
///
/// The handle is live from the thread's start until it shuts down, and only the live handle may be
/// used. Closing every idle connection makes the handle again (libcurl closes a multi handle's
/// connections only when it needs a new one or when the handle goes): the fresh handle becomes the
/// live one first, and only then is the old one cleaned up, so no call can reach it afterwards.
/// Events return what the owner (`MultiHandle`) must do; the owner does it in `carryOut`.
struct MultiHandleState {
    enum Phase: Equatable {
        /// `handle` is the one every call uses.
        case live(UnsafeMutableRawPointer)
        /// No handle: libcurl could not make one, or the thread shut down. Every call is refused.
        case shutDown
    }

    enum Action: Equatable {
        /// Free this handle with `curl_multi_cleanup`; it is no longer the live one.
        case cleanUp(UnsafeMutableRawPointer)
    }

    private(set) var phase: Phase

    /// The state of a handle libcurl just made (`nil` if it could not).
    init(made handle: UnsafeMutableRawPointer?) {
        phase = handle.map { .live($0) } ?? .shutDown
    }

    /// The handle a call may use now, `nil` once shut down.
    var live: UnsafeMutableRawPointer? {
        guard case .live(let handle) = phase else { return nil }
        return handle
    }

    /// `fresh` was made to replace the live handle.
    mutating func replaced(by fresh: UnsafeMutableRawPointer) -> Action {
        switch phase {
        case .live(let old):
            phase = .live(fresh)
            return .cleanUp(old)
        case .shutDown:
            return .cleanUp(fresh)   // nothing may use it
        }
    }

    /// The thread shuts down: nothing uses a handle after this.
    mutating func shutDown() -> Action? {
        guard case .live(let old) = phase else { return nil }
        phase = .shutDown
        return .cleanUp(old)
    }
}

/// A network thread's curl multi handle: every libcurl call on it goes through `withLive`, which
/// hands out the live handle of `MultiHandleState` and nothing else, so no call reaches a handle that
/// was replaced or cleaned up.
/// - Threading: network thread only once the thread runs (made in `NetworkThread.init`).
final class MultiHandle {
    private var state: MultiHandleState
    /// Idle connections kept at most (`CURLMOPT_MAXCONNECTS`); every handle made gets it.
    private let connectionCacheSize: Int
    /// `CURLM_BAD_HANDLE` answers libcurl gave to calls made here: a call on a handle that is not a
    /// live multi handle. Tests check that there are none.
    private(set) var badHandleAnswers = 0
    /// Times the handle was made again to close idle connections.
    private(set) var replacements = 0

    init(connectionCacheSize: Int) {
        CurlGlobal.initialize()
        self.connectionCacheSize = connectionCacheSize
        state = MultiHandleState(made: MultiHandle.make(connectionCacheSize: connectionCacheSize))
    }

    /// Whether there is a live handle (libcurl could make one, and the thread did not shut down).
    var isLive: Bool { state.live != nil }

    /// Puts an easy handle on curl; false if libcurl refused it.
    func add(_ easy: UnsafeMutableRawPointer) -> Bool {
        checked(withLive { curl_multi_add_handle($0, easy) }) == CURLM_OK
    }

    /// Takes an easy handle off curl (nothing happens if it was not on it).
    func remove(_ easy: UnsafeMutableRawPointer) {
        _ = checked(withLive { curl_multi_remove_handle($0, easy) })
    }

    /// Lets curl move every transfer on as far as it can without waiting.
    func perform() {
        var running: Int32 = 0
        _ = checked(withLive { curl_multi_perform($0, &running) })
    }

    /// The next transfer curl reports done: its easy handle and result. Other messages are skipped.
    func nextDone() -> (easy: UnsafeMutableRawPointer, result: CURLcode)? {
        var left: Int32 = 0
        while let message = withLive({ curl_multi_info_read($0, &left) }) ?? nil {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            return (easy, message.pointee.data.result)
        }
        return nil
    }

    /// Sleeps until curl's sockets or `extra` have something, or `timeout` ms passed. Returns whether
    /// `extra` had something.
    func poll(_ extra: curl_waitfd?, timeout: Int32) -> Bool {
        guard var extra else {
            _ = checked(withLive { curl_multi_poll($0, nil, 0, timeout, nil) })
            return false
        }
        _ = checked(withLive { curl_multi_poll($0, &extra, 1, timeout, nil) })
        return extra.revents != 0
    }

    /// Sets `CURLMOPT_MAX_HOST_CONNECTIONS` (0: no cap).
    func setMaxHostConnections(_ count: Int) {
        _ = checked(withLive { ccurl_multi_setopt_long($0, CURLMOPT_MAX_HOST_CONNECTIONS, count) })
    }

    /// Makes the handle again, closing every connection the old one kept (TLS sessions stay in the
    /// share handle). False, and the old handle stays, if libcurl could not make one.
    func replace() -> Bool {
        guard isLive, let fresh = MultiHandle.make(connectionCacheSize: connectionCacheSize) else { return false }
        replacements += 1
        carryOut(state.replaced(by: fresh))
        return true
    }

    /// Frees the handle (with the connections it keeps); every later call is refused.
    func shutDown() {
        if let action = state.shutDown() { carryOut(action) }
    }

    // MARK: The funnel

    /// Runs `body` with the live handle; `nil` without calling it once shut down.
    private func withLive<Result>(_ body: (UnsafeMutableRawPointer) -> Result) -> Result? {
        guard let live = state.live else { return nil }
        return body(live)
    }

    /// libcurl's answer, counted when it is `CURLM_BAD_HANDLE` (`nil`, no call made: also refused).
    private func checked(_ code: CURLMcode?) -> CURLMcode {
        guard let code else { return CURLM_BAD_HANDLE }
        if code == CURLM_BAD_HANDLE { badHandleAnswers += 1 }
        return code
    }

    private func carryOut(_ action: MultiHandleState.Action) {
        switch action {
        case .cleanUp(let handle):
            _ = checked(curl_multi_cleanup(handle))
        }
    }

    /// A multi handle with the library's options (`nil` if libcurl could not allocate one).
    private static func make(connectionCacheSize: Int) -> UnsafeMutableRawPointer? {
        guard let multi = curl_multi_init() else { return nil }
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, connectionCacheSize)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        // The server's own stream limit (its SETTINGS) is what bounds a connection, not curl's 100.
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 1000)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, NetworkThread.multiplexedConnectionsPerHost)
        return multi
    }
}

/// libcurl's process-wide set-up (`curl_global_init`), done once per process before the first
/// handle, however many network threads are made.
/// - Threading: any thread; `initialized` is a static `let`, run once however many threads ask, and
///   `calls` is a `Protected`.
enum CurlGlobal {
    private static let initialized: CURLcode = {
        calls.withLock { $0 += 1 }
        return curl_global_init(Int(CURL_GLOBAL_ALL))
    }()

    /// How many times `curl_global_init` ran (tests check: once).
    static let calls = Protected(0)

    /// Runs `curl_global_init` unless it ran already.
    static func initialize() {
        _ = initialized
    }
}

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
