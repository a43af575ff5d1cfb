import CCurl
import CCurlShim
import Foundation

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
/// - Threading: `submit`, `isParked` and `statistics` from any thread: what they share with the
///   network thread is `state`, reached only through its lock. Every other property is confined to
///   the network thread ("OperationNetworking.network") once it runs, and needs no lock; that is why
///   the class may be `@unchecked Sendable`.
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
    private static let timeoutScanInterval: UInt64 = 50_000_000
    /// How long the loop sleeps, at most, while the wake-up channel has no descriptor.
    private static let unwakeablePollMilliseconds: Int32 = 10

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
    /// What each https origin speaks, and the probes of those not known yet (see `OriginProtocols`).
    var origins = OriginProtocols()
    /// Transfers on curl that need a connection each: plain http, or https to an origin known to be HTTP/1.x.
    var serialTransfers = 0
    /// Whether the multi handle's per-host cap is lifted (see `putOnCurl`).
    var hostCapLifted = false
    /// Transfers on curl, in no order; each knows its place (`Transfer.activeIndex`), and curl's
    /// messages name a transfer through its handle's callback data (`CURLOPT_PRIVATE`).
    var active: [Transfer] = []
    /// Transfers waiting for a slot, oldest first (`waitingHead` is the next to admit).
    var waiting: [Transfer] = []
    var waitingHead = 0
    /// Reset easy handles ready for the next transfer.
    var pool: [CurlEasyHandle] = []
    /// Throttled uploads paused by their read callback, with the time to resume them.
    var pausedUploads: [(transfer: Transfer, at: UInt64)] = []
    /// Transfers waiting out a retry delay, with the time their next attempt is due.
    var delayed: [(transfer: Transfer, at: UInt64)] = []
    /// Starts, ends and retries of this loop turn, handed to the delivery queue at its end.
    var events: [TransferEvent] = []
    private var lastTimeoutScan: UInt64 = 0
    /// `monotonicNow()` as of the start of this loop turn, and again after curl's work in it: the time
    /// transfers stamp their activity with from curl's callbacks. Stale by at most one
    /// `curl_multi_perform`, far below any timeout.
    private(set) var clock: UInt64 = 0
    /// Set by a shut-down command: the loop ends and signals it.
    var shutDownSignal: DispatchSemaphore?

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

    private func run() {
        ccurl_mark_network_thread(Unmanaged.passUnretained(self).toOpaque())
        while shutDownSignal == nil && multi.isLive {
            turn()
        }
        // Shut down: every transfer was ended by its owner before (tests only), so only handles are left.
        flushEvents()
        releaseHandles()
        publishStatistics()
        shutDownSignal?.signal()
    }

    /// One turn of the loop: take commands in, let curl work, carry out what it reports, hand the
    /// turn's events over, and sleep unless there is more to do at once.
    private func turn() {
        clock = monotonicNow()
        drainInbox()
        admitWaiting()
        multi.perform()
        readFinished()
        let now = monotonicNow()
        clock = now
        if now &- lastTimeoutScan >= NetworkThread.timeoutScanInterval {
            lastTimeoutScan = now
            failStalled(now: now)
        }
        // After the scan: a probe it stopped lets the transfers held for it go this turn, so the poll
        // does not sleep while they could start.
        if !origins.probes.isEmpty { learnProbedOrigins() }
        resumeDueUploads(now: now)
        requeueDueRetries(now: now)
        flushEvents()
        closeIdleConnectionsIfDue(now: now)
        publishStatistics()
        // Before parking: a wake-up channel made now must exist before any submitter sees the thread parked.
        let timeout = pollTimeout()
        // A shut-down command taken this turn ends the loop now, not after one more idle poll.
        if park() && shutDownSignal == nil { poll(timeout: timeout) }
    }

    /// Marks the thread parked when nothing is left to do at once, so that commands arriving from
    /// here on wake the poll; false (and the poll is skipped) when commands are already queued or
    /// transfers that ended this turn freed slots that waiting ones can take now.
    private func park() -> Bool {
        let canAdmit = active.count < activeLimit && waitingHead < waiting.count
        return state.withLock {
            $0.parked = $0.inbox.isEmpty && !canAdmit
            return $0.parked
        }
    }

    /// How long the poll may sleep: until the next timeout scan, throttled upload or retry is due.
    private func pollTimeout() -> Int32 {
        var timeout: Int32 = active.isEmpty ? 1000 : 50
        if !wakeup.reopenIfNeeded() {
            // Out of descriptors: nothing can wake the poll, so it must not sleep long.
            timeout = min(timeout, NetworkThread.unwakeablePollMilliseconds)
        }
        if let next = (pausedUploads.map(\.at) + delayed.map(\.at)).min() {
            timeout = min(timeout, Int32(clamping: (next &- min(next, monotonicNow())) / 1_000_000 + 1))
        }
        return timeout
    }

    /// Sleeps until curl's sockets or the wake-up channel have something, or `timeout` ms passed.
    private func poll(timeout: Int32) {
        if multi.poll(wakeup.waitDescriptor, timeout: timeout) { wakeup.drain() }
    }

    private func drainInbox() {
        assertOnNetworkThread()
        var drained: [Command] = []
        state.withLock {
            swap(&$0.inbox, &drained)
            $0.parked = false
        }
        for command in drained {
            switch command {
            case .add(let transfer):
                guard transfer.takeIn(by: self, at: clock) else { break }
                // A cancel made meanwhile is caught at admission (`start`), whichever comes first.
                if let outcome = transfer.outcomeOnArrival { end(transfer, outcome) } else { waiting.append(transfer) }
            case .cancel(let transfer):
                stop(transfer, with: .cancelled)
            case .pause(let transfer):
                stop(transfer, with: .paused(transfer.resumePoint()))
            case .shutDown(let done):
                shutDownSignal = done
            }
        }
    }

    /// An easy handle for a transfer about to start: a pooled one, else a new one (`nil` if libcurl
    /// could not make one).
    func takeEasyHandle() -> CurlEasyHandle? {
        assertOnNetworkThread()
        return pool.popLast() ?? CurlEasyHandle(share: share)
    }

    /// Keeps a handle, reset, for the next transfer.
    func recycle(_ easy: CurlEasyHandle) {
        assertOnNetworkThread()
        guard pool.count < NetworkThread.maxPooledHandles else { return }
        easy.owner = nil   // its transfer is over
        easy.reset()
        pool.append(easy)
    }

    private func publishStatistics() {
        let current = Statistics(active: active.count, waiting: waiting.count - waitingHead + origins.heldCount,
                                 pooledHandles: pool.count, connections: idleConnections.sockets.count,
                                 multiHandleReplacements: multi.replacements,
                                 badMultiHandleAnswers: multi.badHandleAnswers)
        state.withLock { $0.statistics = current }
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

// MARK: - Network thread: hops curl reports done, transfers that end, and the turn's events

extension NetworkThread {
    /// Carries out what each transfer decides about its hop that curl reports done.
    func readFinished() {
        assertOnNetworkThread()
        while let done = multi.nextDone() {
            multi.remove(done.easy)
            guard let transfer = transfer(on: done.easy), takeOffCurl(transfer), let easy = transfer.easy else { continue }
            switch transfer.hopEnded(code: done.result, on: easy) {
            case .finish(let outcome):
                recycle(easy)
                end(transfer, outcome)
            case .retry(let delay, let error):
                recycle(easy)
                if transfer.settings.retriesThroughOwner {
                    end(transfer, .retryRequested(after: delay, error: error))
                    continue
                }
                delayed.append((transfer, transfer.delay(for: delay, now: monotonicNow())))
                if let delegate = transfer.delegate {
                    events.append(.willRetry(transfer, delay: delay, attempt: transfer.attempt + 1, error: error, delegate))
                }
            case .sendNextHop:
                guard let failure = sendNextHop(transfer, easy: easy) else { continue }
                recycle(easy)
                end(transfer, failure)
            }
        }
    }

    /// Sends the transfer's next hop (a redirect or a challenge answer), or its current one again, on
    /// the same easy handle: `nil` when it is back on curl, else how the transfer ends. The reset also
    /// starts libcurl's own count of resends over (`curl_easy_reset` is the only thing that does). A
    /// resend picks its connection as a first send does (curl never reuses one that died or that a
    /// GOAWAY ended), so a burst of resends shares connections instead of opening one each.
    private func sendNextHop(_ transfer: Transfer, easy: CurlEasyHandle) -> TransferOutcome? {
        easy.reset()
        do {
            try transfer.configure(easy)
        } catch {
            return .failed(error)
        }
        guard multi.add(easy.raw) else {
            return .failed(TransportError.make(.unknown, "libcurl refused the next hop.", url: transfer.currentRequest.url))
        }
        putOnCurl(transfer, easy: easy)
        return nil
    }

    /// Ends a transfer on this thread; its delegate hears of it with the turn's other events.
    func end(_ transfer: Transfer, _ outcome: TransferOutcome) {
        assertOnNetworkThread()
        guard let delegate = transfer.finish() else { return }
        idleConnections.transferEnded()
        events.append(.ended(transfer, outcome, delegate))
    }

    /// Hands this turn's events to the delivery queue in one dispatch, in the order they happened.
    func flushEvents() {
        assertOnNetworkThread()
        guard !events.isEmpty else { return }
        let batch = events
        events = []
        CallbackQueues.delivery.async { TransferEvent.deliver(batch) }
    }
}

/// Monotonic clock in nanoseconds (`CLOCK_MONOTONIC`). Its values are only ever compared with each other.
func monotonicNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(truncatingIfNeeded: time.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: time.tv_nsec)
}
