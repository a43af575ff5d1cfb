import CCurl
import CCurlShim
import Foundation
import Synchronization

/// The one thread per process that drives every transfer through one curl multi handle.
///
/// Other threads never touch curl handles: they append a command to the inbox and, only when the
/// thread is parked in `curl_multi_poll`, wake it through the library's own `WakeupChannel` (a
/// non-blocking eventfd polled beside curl's sockets, which can be made again if the process was out of
/// descriptors when the thread started), so a burst of submissions costs one wake-up. The thread adds,
/// removes and reconfigures easy handles, runs `curl_multi_perform`, reads finished transfers and
/// sleeps in `curl_multi_poll`, all through `MultiHandle`, which only ever calls the live multi
/// handle. Transfers beyond `maxActiveTransfers` wait in a FIFO without an easy handle, so ten
/// thousand queued requests cost little memory.
///
/// What happened to transfers during one loop turn (ended, retrying) leaves the thread at
/// the end of that turn as one batch: a single dispatch to `CallbackQueues.delivery`.
///
/// TLS set-up is shared: the multi handle caches the parsed system CA store (libcurl's CA cache,
/// which only applies when no CA directory is configured, so none is), and a share handle keeps TLS
/// sessions for resumption, so a new connection costs the handshake and nothing more.
///
/// The host process is the caller's: the thread leaves the C allocator alone unless the process
/// opts in with `OPERATIONNETWORKING_MALLOC_TUNING=1` (see `MallocThresholds`), and libcurl's global
/// set-up runs once per process (`CurlGlobal`).
/// The loop's own state (the transfers on curl and waiting, the handle pool, the turn's events) is
/// not stored here: it is a `NetworkLoop`, a value in the frame of the thread's `run()`.
/// - Threading: `submit`, `isParked` and `statistics` from any thread: what they share with the
///   network thread is `state`, reached only through its lock. Every other property is confined to
///   the network thread ("OperationNetworking.network") once it runs, and needs no lock (`turnClock`
///   is an atomic only so that a `let` holds it); that is why the class may be `@unchecked Sendable`.
final class NetworkThread: @unchecked Sendable {
    /// The process-wide instance, created (and its thread started) on first use.
    static let shared = NetworkThread()

    /// Transfers on curl at once; the rest wait in `waiting`.
    static let maxActiveTransfers = 512
    /// Idle easy handles kept for reuse: as many as can be active, so a steady load never makes new ones.
    static let maxPooledHandles = maxActiveTransfers
    /// Connections per host while every transfer on curl may multiplex (https, not known to be
    /// HTTP/1.x): a burst to an HTTP/2 origin shares these instead of opening one connection per
    /// request. Lifted while any transfer needs a connection of its own (HTTP/1.x), so that a queue's
    /// concurrency to an HTTP/1.x host is never capped.
    static let multiplexedConnectionsPerHost = 4
    /// How often stalled transfers are looked for.
    static let timeoutScanInterval: UInt64 = 50_000_000
    /// How long the loop sleeps, at most, while the wake-up channel has no descriptor.
    static let unwakeablePollMilliseconds: Int32 = 10

    /// A request from another thread.
    enum Command {
        case add(Transfer)
        case cancel(Transfer)
        case pause(Transfer)
        /// End the loop and free every handle (threads a test made; `shared` is never shut down).
        case shutDown(DispatchSemaphore)
    }

    /// Counts for tests and diagnostics.
    struct Statistics: Equatable {
        var active = 0
        var waiting = 0
        var pooledHandles = 0
        /// Connections curl holds open (their sockets not yet closed), busy or idle.
        var connections = 0
        /// Times the multi handle was made again to close idle connections.
        var multiHandleReplacements = 0
        /// `CURLM_BAD_HANDLE` answers from libcurl: calls on a multi handle that was not the live one.
        var badMultiHandleAnswers = 0
    }

    /// What other threads share with the network thread.
    struct State {
        /// Commands not yet seen by the thread.
        var inbox: [Command] = []
        /// Whether the thread is (about to be) asleep in `curl_multi_poll` and needs a wake-up for new
        /// commands.
        var parked = false
        /// The counts the thread published last.
        var statistics = Statistics()
    }

    private let state = Protected(State())
    /// Whether the thread runs (libcurl could make its multi handle; if not, every transfer fails).
    private let started: Bool
    /// The multi handle, the only way to it (see `MultiHandle`).
    let multi: MultiHandle
    /// The sockets of the multi handle's connections, and when idle ones are closed.
    let idleConnections: IdleConnections
    /// TLS sessions shared by every easy handle (`nil` if libcurl could not allocate it: no resumption).
    let share: UnsafeMutableRawPointer?
    /// How other threads wake the loop (not `curl_multi_wakeup`: see `WakeupChannel`).
    private let wakeup = WakeupChannel()
    /// Whether the thread moved glibc's malloc thresholds and trims freed memory when idle (the
    /// process opted in: see `MallocThresholds`).
    let tunesAllocator: Bool

    // MARK: Network thread only
    /// Connections a pinning policy accepted (see `Transfer.serverIsTrusted`).
    let trustedConnections = TrustedConnections()
    /// `monotonicNow()` as of the start of the loop turn, and again after curl's work in it: the time
    /// transfers stamp their activity with from curl's callbacks. Stale by at most one
    /// `curl_multi_perform`, far below any timeout. Only the network thread reads and writes it; it is
    /// an `Atomic` (relaxed, a plain load and store) so that a `let` holds it: curl's callbacks reach
    /// it through the transfer's reference to the thread, and a class's `var` would cost a run-time
    /// exclusivity check on every callback.
    let turnClock = Atomic<UInt64>(0)
    /// Throttled uploads their read callback paused (in `curl_multi_perform`, or when the loop
    /// unpaused them), with the time to resume them: the callbacks cannot reach the loop's own state,
    /// so the loop moves these into it (`NetworkLoop.pausedUploads`) before it looks at its own.
    var uploadsPausedByCallbacks: [(transfer: Transfer, at: UInt64)] = []

    /// How long an idle keep-alive connection is kept for reuse: 30 s by default (libcurl's own
    /// default is 118 s, long enough for connections the server already closed to pile up in
    /// CLOSE-WAIT). Handed to every transfer.
    let idleConnectionLifetime: Int
    /// Idle connections kept at most (`CURLMOPT_MAXCONNECTS`), from the descriptor limit at start.
    let connectionCacheSize: Int
    /// Transfers on curl at once: `maxActiveTransfers`, fewer on threads tests make.
    let activeLimit: Int

    /// The idle connections to keep for a process that may open `descriptorLimit` descriptors: a
    /// quarter of them (at least 4, at most as many as transfers can be active), so that the cache
    /// never holds the process at its limit while other code needs descriptors.
    static func connectionCacheSize(forDescriptorLimit descriptorLimit: UInt64) -> Int {
        Int(clamping: min(max(descriptorLimit / 4, 4), UInt64(maxActiveTransfers)))
    }

    /// A thread with its own multi handle; the library uses `shared` (tests make their own).
    /// `tunesAllocator` is the process's opt-in (`MallocThresholds.optedIn`) unless a test says.
    init(idleConnectionLifetime: Int = 30, activeLimit: Int = NetworkThread.maxActiveTransfers,
         tunesAllocator: Bool = MallocThresholds.optedIn) {
        self.idleConnectionLifetime = idleConnectionLifetime
        self.activeLimit = max(1, min(activeLimit, NetworkThread.maxActiveTransfers))
        self.tunesAllocator = tunesAllocator
        idleConnections = IdleConnections(trimsMemory: tunesAllocator)
        var limit = rlimit()
        let known = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0
        connectionCacheSize = NetworkThread.connectionCacheSize(forDescriptorLimit: known ? UInt64(limit.rlim_cur) : 1024)
        if tunesAllocator { MallocThresholds.settled }
        multi = MultiHandle(connectionCacheSize: connectionCacheSize)
        // Only this thread uses the share handle, so it needs no lock callbacks.
        share = curl_share_init()
        if let share {
            _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
        }
        started = multi.isLive
        guard started else { return }
        let thread = Thread { [self] in run() }
        thread.name = "OperationNetworking.network"
        thread.start()
    }

    /// Hands a command to the network thread (any thread).
    func submit(_ command: Command) {
        guard started else {
            // Without a multi handle there is no network thread: the transfer was never handed over,
            // so it ends here, on the caller's thread.
            if case .add(let transfer) = command, let delegate = transfer.finish() {
                let error = TransportError.make(.unknown, "libcurl could not be initialised.", url: transfer.currentRequest.url)
                TransferEvent.deliver([.ended(transfer, .failed(error), delegate)])
            }
            return
        }
        let wake: Bool = state.withLock { state in
            state.inbox.append(command)
            defer { state.parked = false }
            return state.parked
        }
        if wake { wakeup.signal() }
    }

    /// Whether the thread is asleep in (or entering) `curl_multi_poll`, so a new command must wake it.
    var isParked: Bool {
        state.withLock { $0.parked }
    }

    /// The latest counts published by the network thread.
    var statistics: Statistics {
        state.withLock { $0.statistics }
    }

    /// Ends the thread and frees its handles, waiting until it did. For threads tests make.
    func shutDown() {
        let done = DispatchSemaphore(value: 0)
        submit(.shutDown(done))
        done.wait()
    }

    // MARK: - Network thread

    /// The thread's main function: the loop's own state is a value in this frame (`NetworkLoop`), which
    /// every function of a turn gets `inout`, so the compiler checks at build time that no two change it at once.
    private func run() {
        ccurl_mark_network_thread(Unmanaged.passUnretained(self).toOpaque())
        var loop = NetworkLoop(thread: self)
        while loop.shutDownSignal == nil && multi.isLive {
            loop.turn()
        }
        loop.end()
    }

    /// The commands other threads queued since the last call; the thread is no longer parked.
    func takeCommands() -> [Command] {
        assertOnNetworkThread()
        var drained: [Command] = []
        state.withLock {
            swap(&$0.inbox, &drained)
            $0.parked = false
        }
        return drained
    }

    /// Marks the thread parked when nothing is left to do at once, so that commands arriving from
    /// here on wake the poll; false (and the poll is skipped) when commands are already queued or
    /// `canAdmit` (transfers that ended this turn freed slots that waiting ones can take now).
    func park(unless canAdmit: Bool) -> Bool {
        state.withLock {
            $0.parked = $0.inbox.isEmpty && !canAdmit
            return $0.parked
        }
    }

    /// Makes `current` the counts `statistics` reports.
    func publish(_ current: Statistics) {
        state.withLock { $0.statistics = current }
    }

    /// Sleeps until curl's sockets or the wake-up channel have something, or `timeout` ms passed.
    func poll(timeout: Int32) {
        if multi.poll(wakeup.waitDescriptor, timeout: timeout) { wakeup.drain() }
    }

    /// Whether the wake-up channel has a descriptor (made now if it had none): false while the process
    /// is out of descriptors, when nothing can wake the poll.
    func canBeWoken() -> Bool {
        wakeup.reopenIfNeeded()
    }

    /// The clock of this loop turn (see `turnClock`).
    var clock: UInt64 { turnClock.load(ordering: .relaxed) }

    /// Called from a read callback (network thread) when a throttled body must wait until `at`.
    func resumeUpload(_ transfer: Transfer, at: UInt64) {
        assertOnNetworkThread()
        uploadsPausedByCallbacks.append((transfer, at))
    }
}

extension NetworkThread {
    /// Whether the calling thread is this network thread (for debug assertions).
    var isCurrentThread: Bool {
        ccurl_current_network_thread() == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }
}

/// Stops a debug build when called off a network thread (the confinement the transfers' and the
/// loop's state relies on); does nothing in release builds.
@inline(__always)
func assertOnNetworkThread(file: StaticString = #fileID, line: UInt = #line) {
    assert(ccurl_is_network_thread() != 0, "called off the network thread", file: file, line: line)
}

/// Monotonic clock in nanoseconds (`CLOCK_MONOTONIC`). Its values are only ever compared with each other.
func monotonicNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(truncatingIfNeeded: time.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: time.tv_nsec)
}
