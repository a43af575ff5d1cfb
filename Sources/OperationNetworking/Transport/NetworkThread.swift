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
/// sleeps in `curl_multi_poll`. Transfers beyond `maxActiveTransfers` wait in a FIFO without an
/// easy handle, so ten thousand queued requests cost little memory.
///
/// What happened to transfers during one loop iteration (started, ended) leaves the thread as one
/// batch: a single dispatch to `CallbackQueues.delivery`, not one per transfer.
///
/// TLS set-up is shared: the multi handle caches the parsed system CA store (libcurl's CA cache,
/// which only applies when no CA directory is configured, so none is), and a share handle keeps TLS
/// sessions for resumption, so a new connection costs the handshake and nothing more.
/// - Threading: `submit` from any thread; everything else runs on the thread itself
///   ("OperationNetworking.network"). Shared state is the inbox and the parked flag, guarded by
///   `inboxLock`, and `statistics`, guarded by `statisticsLock`; the rest is confined to the thread,
///   which is why the class may be `@unchecked Sendable`.
final class NetworkThread: @unchecked Sendable {
    /// The process-wide instance, created (and its thread started) on first use.
    static let shared = NetworkThread()

    /// Transfers on curl at once; the rest wait in `waiting`.
    static let maxActiveTransfers = 512
    /// Idle easy handles kept for reuse: as many as can be active, so a steady load never makes new ones.
    private static let maxPooledHandles = maxActiveTransfers
    /// Connections per host while every transfer on curl may multiplex (https, not known to be
    /// HTTP/1.x): a burst to an HTTP/2 origin shares these instead of opening one connection per
    /// request. Lifted while any transfer needs a connection of its own (HTTP/1.x), so that a queue's
    /// concurrency to an HTTP/1.x host is never capped.
    static let multiplexedConnectionsPerHost = 4
    /// How often stalled transfers are looked for.
    private static let timeoutScanInterval: UInt64 = 50_000_000

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
    }

    /// Whether the thread runs (libcurl could allocate its multi handle; if not, every transfer fails).
    private let started: Bool
    /// The multi handle; network thread only after init (made again to close idle connections).
    @exclusivity(unchecked) var multi: UnsafeMutableRawPointer?
    /// The sockets of the multi handle's connections, and when idle ones are closed; network thread only.
    let idleConnections = IdleConnections()
    /// TLS sessions shared by every easy handle (`nil` if libcurl could not allocate it: no resumption).
    let share: UnsafeMutableRawPointer?
    /// How other threads wake the loop (not `curl_multi_wakeup`: see `WakeupChannel`).
    private let wakeup = WakeupChannel()
    /// How long the loop sleeps, at most, while the wake-up channel has no descriptor.
    private static let unwakeablePollMilliseconds: Int32 = 10
    private let inboxLock = NSLock()
    /// Commands not yet seen by the thread; guarded by `inboxLock`.
    @exclusivity(unchecked) private var inbox: [Command] = []
    /// Whether the thread is (about to be) asleep in `curl_multi_poll` and needs a wake-up for new
    /// commands; guarded by `inboxLock`.
    @exclusivity(unchecked) private var parked = false
    private let statisticsLock = NSLock()
    /// Published copy of the counts; guarded by `statisticsLock`.
    @exclusivity(unchecked) private var publishedStatistics = Statistics()

    // MARK: Network thread only
    /// Connections a pinning policy accepted (see `Transfer.serverIsTrusted`).
    let trustedConnections = TrustedConnections()
    /// What each https origin speaks, and the probes of those not known yet (see `OriginProtocols`).
    @exclusivity(unchecked) var origins = OriginProtocols()
    /// Transfers on curl that need a connection each: plain http, or https to an origin known to be HTTP/1.x.
    @exclusivity(unchecked) var serialTransfers = 0
    /// Whether the multi handle's per-host cap is lifted (see `putOnCurl`).
    @exclusivity(unchecked) var hostCapLifted = false
    /// Transfers on curl, in no order; each knows its place (`Transfer.activeIndex`), and curl's
    /// messages name a transfer through its handle's header block (`CURLOPT_PRIVATE`), so putting one
    /// on and taking it off costs no hashing (a dictionary by handle cost about 440 instructions a
    /// request; bench/README.md, round 10).
    @exclusivity(unchecked) var active: [Transfer] = []
    /// Transfers waiting for a slot, oldest first (`waitingHead` is the next to admit).
    @exclusivity(unchecked) var waiting: [Transfer] = []
    @exclusivity(unchecked) var waitingHead = 0
    /// Reset easy handles ready for the next transfer.
    @exclusivity(unchecked) var pool: [CurlEasyHandle] = []
    /// Throttled uploads paused by their read callback, with the time to resume them.
    @exclusivity(unchecked) var pausedUploads: [(transfer: Transfer, at: UInt64)] = []
    /// Transfers waiting out a retry delay, with the time their next attempt is due.
    @exclusivity(unchecked) var delayed: [(transfer: Transfer, at: UInt64)] = []
    /// Spare array swapped with `inbox`, so draining allocates nothing.
    @exclusivity(unchecked) private var drained: [Command] = []
    /// Starts and ends of this loop iteration, handed to the delivery queue in one dispatch.
    @exclusivity(unchecked) private var events: [TransferEvent] = []
    /// Since when `events` has held nothing but starts kept back (see `flushEvents`); `nil` if it does not.
    @exclusivity(unchecked) private var startsHeldSince: UInt64?
    @exclusivity(unchecked) private var lastTimeoutScan: UInt64 = 0
    /// `monotonicNow()` as of the start of this loop turn, and again after curl's work in it: the time
    /// transfers stamp their activity with from curl's callbacks (two clock reads per turn instead of
    /// one per header line and body piece: 12 fewer per request at W2 shape). Stale by at most one
    /// `curl_multi_perform`, far below any timeout. In its own allocation, since the header blocks of
    /// this thread's easy handles read it from C (freed in `deinit`, after which no handle of the
    /// thread is used).
    private let clockCell: UnsafeMutablePointer<UInt64> = {
        let cell = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        cell.initialize(to: 0)
        return cell
    }()
    var clock: UInt64 { clockCell.pointee }
    /// Set by a shut-down command: the loop ends and signals it.
    private var shutDownSignal: DispatchSemaphore?

    /// How long an idle keep-alive connection is kept for reuse: 30 s by default (libcurl's own
    /// default is 118 s, long enough for connections the server already closed to pile up in
    /// CLOSE-WAIT). Handed to every transfer.
    let idleConnectionLifetime: Int
    /// Idle connections kept at most (`CURLMOPT_MAXCONNECTS`), from the descriptor limit at start.
    let connectionCacheSize: Int
    /// How long, at most, a batch of nothing but starts waits for company before it is delivered
    /// alone (see `flushEvents`): 1 ms, far below anything a caller could notice.
    let startHoldMilliseconds: Int32
    /// Transfers on curl at once: `maxActiveTransfers`, fewer on threads tests make.
    let activeLimit: Int

    /// The idle connections to keep for a process that may open `descriptorLimit` descriptors: a
    /// quarter of them (at least 4, at most as many as transfers can be active), so that the cache
    /// never holds the process at its limit while other code needs descriptors.
    static func connectionCacheSize(forDescriptorLimit descriptorLimit: UInt64) -> Int {
        Int(clamping: min(max(descriptorLimit / 4, 4), UInt64(maxActiveTransfers)))
    }

    /// A thread with its own multi handle; the library uses `shared` (tests make their own).
    init(idleConnectionLifetime: Int = 30, startHoldMilliseconds: Int32 = 1,
         activeLimit: Int = NetworkThread.maxActiveTransfers) {
        self.idleConnectionLifetime = idleConnectionLifetime
        self.startHoldMilliseconds = startHoldMilliseconds
        self.activeLimit = max(1, min(activeLimit, NetworkThread.maxActiveTransfers))
        var limit = rlimit()
        let known = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0
        connectionCacheSize = NetworkThread.connectionCacheSize(forDescriptorLimit: known ? UInt64(limit.rlim_cur) : 1024)
        curl_global_init(Int(CURL_GLOBAL_ALL))
        MallocThresholds.settled
        multi = NetworkThread.makeMulti(connectionCacheSize: connectionCacheSize)
        started = multi != nil
        // Only this thread uses the share handle, so it needs no lock callbacks.
        share = curl_share_init()
        if let share {
            _ = ccurl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
        }
        guard started else { return }
        let thread = Thread { [self] in run() }
        thread.name = "OperationNetworking.network"
        thread.start()
    }

    deinit {
        clockCell.deallocate()
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
        let wake: Bool = inboxLock.withLock {
            inbox.append(command)
            defer { parked = false }
            return parked
        }
        if wake { wakeup.signal() }
    }

    /// Whether the thread is asleep in (or entering) `curl_multi_poll`, so a new command must wake it.
    var isParked: Bool {
        inboxLock.withLock { parked }
    }

    /// The latest counts published by the network thread.
    var statistics: Statistics {
        statisticsLock.withLock { publishedStatistics }
    }

    // MARK: - Network thread

    private func run() {
        ccurl_mark_network_thread()
        var running: Int32 = 0
        while shutDownSignal == nil, let multi {
            clockCell.pointee = monotonicNow()
            drainInbox()
            admitWaiting(multi)
            curl_multi_perform(multi, &running)
            readFinished(multi)
            if !origins.probes.isEmpty { learnProbedOrigins() }
            let now = monotonicNow()
            clockCell.pointee = now
            if now &- lastTimeoutScan >= NetworkThread.timeoutScanInterval {
                lastTimeoutScan = now
                failStalled(multi, now: now)
            }
            resumeDueUploads(now: now)
            requeueDueRetries(now: now)
            flushEvents(now: now)
            closeIdleConnectionsIfDue(now: now)
            publishStatistics()
            var timeout: Int32 = active.isEmpty ? 1000 : 50
            if let since = startsHeldSince {
                let held = (now &- since) / 1_000_000
                timeout = min(timeout, Int32(clamping: max(Int64(startHoldMilliseconds) - Int64(clamping: held), 1)))
            }
            if !wakeup.reopenIfNeeded() {
                // Out of descriptors: nothing can wake the poll, so it must not sleep long.
                timeout = min(timeout, NetworkThread.unwakeablePollMilliseconds)
            }
            if !pausedUploads.isEmpty || !delayed.isEmpty, let next = (pausedUploads.map(\.at) + delayed.map(\.at)).min() {
                timeout = min(timeout, Int32(clamping: (next &- min(next, monotonicNow())) / 1_000_000 + 1))
            }
            // Transfers that ended this turn freed slots that waiting ones can take at once: the loop
            // must not sleep on them (with nothing left on curl, that sleep was the idle second).
            let canAdmit = active.count < activeLimit && waitingHead < waiting.count
            // Commands that arrive from here on wake the poll; ones already queued skip it.
            let idle: Bool = inboxLock.withLock {
                parked = inbox.isEmpty && !canAdmit
                return parked
            }
            // A shut-down command taken this turn ends the loop now, not after one more idle poll. The
            // handle is read again: closing idle connections may have replaced the one this turn began with.
            if idle && shutDownSignal == nil, let live = self.multi { poll(live, timeout: timeout) }
        }
        // Shut down: every transfer was ended by its owner before (tests only), so only handles are left.
        flushEvents(now: monotonicNow(), holdingStarts: false)
        if let multi { releaseHandles(multi) }
        multi = nil
        publishStatistics()
        shutDownSignal?.signal()
    }

    /// Ends the thread and frees its handles, waiting until it did. For threads tests make.
    func shutDown() {
        let done = DispatchSemaphore(value: 0)
        submit(.shutDown(done))
        done.wait()
    }

    /// Sleeps until curl's sockets or the wake-up channel have something, or `timeout` ms passed.
    private func poll(_ multi: UnsafeMutableRawPointer, timeout: Int32) {
        guard var extra = wakeup.waitDescriptor else {
            curl_multi_poll(multi, nil, 0, timeout, nil)
            return
        }
        curl_multi_poll(multi, &extra, 1, timeout, nil)
        if extra.revents != 0 { wakeup.drain() }
    }

    private func drainInbox() {
        assertOnNetworkThread()
        inboxLock.withLock {
            swap(&inbox, &drained)
            parked = false
        }
        guard !drained.isEmpty else { return }
        for command in drained {
            switch command {
            case .add(let transfer):
                if let delegate = transfer.delegate { events.append(.started(transfer, delegate)) }
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
        drained.removeAllKeepingStorage()
    }

    /// Ends a transfer early (cancel, pause, stall), wherever it is. A waiting transfer stays in the
    /// FIFO and is skipped when its turn comes.
    private func stop(_ transfer: Transfer, with outcome: TransferOutcome) {
        assertOnNetworkThread()
        if let easy = transfer.leaveCurlEarly(), let multi {
            curl_multi_remove_handle(multi, easy.raw)
            takeOffCurl(transfer, multi: multi)
            recycle(easy)
        }
        end(transfer, outcome)
    }

    private func admitWaiting(_ multi: UnsafeMutableRawPointer) {
        assertOnNetworkThread()
        while active.count < activeLimit && waitingHead < waiting.count {
            let transfer = waiting[waitingHead]
            waitingHead += 1
            guard case .waiting = transfer.state.phase, !holdsForProbe(transfer) else { continue }
            start(transfer, multi)
        }
        if waitingHead == waiting.count {
            waiting.removeAllKeepingStorage()
            waitingHead = 0
        } else if waitingHead > 4096 {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    /// Gives a transfer an easy handle and puts it on curl; a failure ends the transfer.
    private func start(_ transfer: Transfer, _ multi: UnsafeMutableRawPointer) {
        // A cancel made while it waited: its command may still be in the inbox, but its request must not start.
        guard !transfer.isCancelRequested else {
            end(transfer, .cancelled)
            return
        }
        guard let easy = pool.popLast() ?? CurlEasyHandle(share: share, clock: clockCell) else {
            end(transfer, .failed(TransportError.make(.unknown, "libcurl could not create a handle.",
                                                        url: transfer.currentRequest.url)))
            return
        }
        do {
            try transfer.admit(on: easy)
        } catch {
            recycle(easy)
            end(transfer, .failed(error))
            return
        }
        guard curl_multi_add_handle(multi, easy.raw) == CURLM_OK else {
            recycle(easy)
            end(transfer, .failed(TransportError.make(.unknown, "libcurl refused the transfer.",
                                                        url: transfer.currentRequest.url)))
            return
        }
        putOnCurl(transfer, easy: easy, multi: multi)
        probeIfUnknown(transfer)
    }

    /// Carries out what each transfer decides about its hop that curl reports done.
    private func readFinished(_ multi: UnsafeMutableRawPointer) {
        assertOnNetworkThread()
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let raw = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            curl_multi_remove_handle(multi, raw)
            guard let transfer = transfer(on: raw), takeOffCurl(transfer, multi: multi),
                  let easy = transfer.easy else { continue }
            switch transfer.hopEnded(code: code, on: easy) {
            case .finish(let outcome):
                recycle(easy)
                end(transfer, outcome)
            case .retry(let delay, let error):
                recycle(easy)
                delayed.append((transfer, transfer.delay(for: delay, now: monotonicNow())))
                if let delegate = transfer.delegate {
                    events.append(.willRetry(transfer, delay: delay, attempt: transfer.attempt + 1, error: error, delegate))
                }
            case .sendNextHop:
                guard let failure = sendNextHop(transfer, easy: easy, multi: multi) else { continue }
                recycle(easy)
                end(transfer, failure)
            case .resendOnFreshConnection:
                guard let failure = sendNextHop(transfer, easy: easy, multi: multi, onFreshConnection: true) else { continue }
                recycle(easy)
                end(transfer, failure)
            }
        }
    }

    /// Sends the transfer's next hop (a redirect or a challenge answer), or its current one again, on
    /// the same easy handle: `nil` when it is back on curl, else how the transfer ends. The reset also
    /// starts libcurl's own count of resends over (`curl_easy_reset` is the only thing that does).
    private func sendNextHop(_ transfer: Transfer, easy: CurlEasyHandle, multi: UnsafeMutableRawPointer,
                             onFreshConnection: Bool = false) -> TransferOutcome? {
        easy.reset()
        do {
            try transfer.configure(easy)
        } catch {
            return .failed(error)
        }
        if onFreshConnection {
            _ = ccurl_easy_setopt_long(easy.raw, CURLOPT_FRESH_CONNECT, 1)
            // Reset when recycled, so that the next transfer on the handle may reuse connections again.
        }
        guard curl_multi_add_handle(multi, easy.raw) == CURLM_OK else {
            return .failed(TransportError.make(.unknown, "libcurl refused the next hop.", url: transfer.currentRequest.url))
        }
        putOnCurl(transfer, easy: easy, multi: multi)
        return nil
    }

    /// Puts transfers whose retry delay is over back in the FIFO (a cancel or pause during the delay
    /// already ended them: those are dropped).
    private func requeueDueRetries(now: UInt64) {
        guard !delayed.isEmpty else { return }
        let due = delayed.filter { $0.at <= now }
        guard !due.isEmpty else { return }
        delayed.removeAll { $0.at <= now }
        for entry in due where entry.transfer.beginNextAttempt() {
            waiting.append(entry.transfer)
        }
    }

    /// Called from a read callback (network thread) when a throttled body must wait until `at`.
    func resumeUpload(_ transfer: Transfer, at: UInt64) {
        assertOnNetworkThread()
        pausedUploads.append((transfer, at))
    }

    /// Unpauses throttled uploads whose delay is over (`curl_easy_pause` may call the read callback).
    private func resumeDueUploads(now: UInt64) {
        guard !pausedUploads.isEmpty else { return }
        let due = pausedUploads.filter { $0.at <= now }
        pausedUploads.removeAll { $0.at <= now }
        for entry in due {
            if let easy = entry.transfer.easy { curl_easy_pause(easy.raw, CURLPAUSE_CONT) }
        }
    }

    /// Fails transfers with no bytes moving for longer than their request's `timeoutInterval`.
    private func failStalled(_ multi: UnsafeMutableRawPointer, now: UInt64) {
        var stalled: [Transfer] = []
        // lastActivity may lie ahead: a throttled upload counts its planned pause as activity.
        for transfer in active {
            let last = transfer.latestActivity
            if now > last && now - last > transfer.timeoutNanoseconds { stalled.append(transfer) }
        }
        for transfer in stalled {
            let error = TransportError.make(.timedOut, "No data moved for \(transfer.currentRequest.timeoutInterval) s.",
                                            url: transfer.currentRequest.url)
            stop(transfer, with: .failed(error))
        }
    }

    /// Ends a transfer on this thread; its delegate hears of it with the iteration's other events.
    private func end(_ transfer: Transfer, _ outcome: TransferOutcome) {
        assertOnNetworkThread()
        guard let delegate = transfer.finish() else { return }
        idleConnections.transferEnded()
        events.append(.ended(transfer, outcome, delegate))
    }

    /// Hands this iteration's events to the delivery queue in one dispatch.
    ///
    /// Starts alone wait for company, up to `startHoldMilliseconds`: a quick transfer's end then
    /// leaves with its start, so the start costs no hop of its own to the delivery queue and on to
    /// the callback queue (`bench/README.md` has what that saves). The start notification still
    /// precedes the end: same batch, in order.
    private func flushEvents(now: UInt64, holdingStarts: Bool = true) {
        guard !events.isEmpty else { return }
        if holdingStarts, !events.contains(where: { if case .started = $0 { false } else { true } }) {
            guard let since = startsHeldSince else {
                startsHeldSince = now
                return
            }
            if now &- since < UInt64(startHoldMilliseconds) * 1_000_000 { return }
        }
        startsHeldSince = nil
        let batch = events
        events.removeAll(keepingCapacity: true)
        CallbackQueues.delivery.async { TransferEvent.deliver(batch) }
    }

    /// Keeps a handle, reset, for the next transfer.
    private func recycle(_ easy: CurlEasyHandle) {
        assertOnNetworkThread()
        guard pool.count < NetworkThread.maxPooledHandles else { return }
        easy.headerBlock.pointee.owner = nil   // its transfer is over
        easy.reset()
        pool.append(easy)
    }

    private func publishStatistics() {
        let current = Statistics(active: active.count, waiting: waiting.count - waitingHead + origins.heldCount,
                                 pooledHandles: pool.count,
                                 connections: idleConnections.sockets.count)
        statisticsLock.withLock { publishedStatistics = current }
    }
}

/// Stops a debug build when called off a network thread (the confinement the transfers' and the
/// loop's state relies on); does nothing in release builds.
@inline(__always)
func assertOnNetworkThread(file: StaticString = #fileID, line: UInt = #line) {
    assert(ccurl_is_network_thread() != 0, "called off the network thread", file: file, line: line)
}
