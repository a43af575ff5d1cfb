import CCurl
import CCurlShim
import Foundation

/// What a network thread's loop alone reads and changes from one turn to the next: the transfers on
/// curl and those waiting for a slot or a retry, the pooled easy handles, what it knows of each
/// origin's protocol, and the turn's events.
///
/// A value, not stored properties of `NetworkThread`: the thread's `run()` keeps it in a local and
/// every function of a turn is one of its `mutating` methods, so each reaches it `inout` and the
/// compiler checks at build time that no two change it at once. A class's `var`s touched on every
/// turn would each cost an exclusivity check at run time. What curl's callbacks must reach while
/// `curl_multi_perform` runs stays on the thread (`NetworkThread.turnClock`,
/// `NetworkThread.uploadsPausedByCallbacks`, `NetworkThread.idleConnections`), and so does what other
/// threads share with the loop (its `state`, behind a lock).
/// - Threading: network thread only: a local of `NetworkThread.run()`, which no other code can reach.
struct NetworkLoop {
    /// The thread this loop runs on: its multi handle, share handle, idle connections and limits.
    let thread: NetworkThread
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
    /// When stalled transfers were last looked for.
    var lastTimeoutScan: UInt64 = 0
    /// This turn's clock, as `NetworkThread.turnClock` gives it to curl's callbacks.
    private(set) var clock: UInt64 = 0
    /// Set by a shut-down command: the loop ends and signals it.
    var shutDownSignal: DispatchSemaphore?

    init(thread: NetworkThread) {
        self.thread = thread
    }

    /// One turn of the loop: take commands in, let curl work, carry out what it reports, hand the
    /// turn's events over, and sleep unless there is more to do at once.
    mutating func turn() {
        setClock(monotonicNow())
        drainInbox()
        admitWaiting()
        thread.multi.perform()
        readFinished()
        let now = monotonicNow()
        setClock(now)
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
        let canAdmit = active.count < thread.activeLimit && waitingHead < waiting.count
        if thread.park(unless: canAdmit) && shutDownSignal == nil { thread.poll(timeout: timeout) }
    }

    /// After the loop: every transfer was ended by its owner before (tests only), so only handles are
    /// left to free; then the shut-down command hears that the thread is done.
    mutating func end() {
        flushEvents()
        releaseHandles()
        publishStatistics()
        shutDownSignal?.signal()
    }

    /// Sets this turn's clock, here and for curl's callbacks.
    private mutating func setClock(_ now: UInt64) {
        clock = now
        thread.turnClock.store(now, ordering: .relaxed)
    }

    /// How long the poll may sleep: until the next timeout scan, throttled upload or retry is due.
    private func pollTimeout() -> Int32 {
        var timeout: Int32 = active.isEmpty ? 1000 : 50
        if !thread.canBeWoken() {
            // Out of descriptors: nothing can wake the poll, so it must not sleep long.
            timeout = min(timeout, NetworkThread.unwakeablePollMilliseconds)
        }
        if let next = (pausedUploads.map(\.at) + delayed.map(\.at)).min() {
            timeout = min(timeout, Int32(clamping: (next &- min(next, monotonicNow())) / 1_000_000 + 1))
        }
        return timeout
    }

    private mutating func drainInbox() {
        assertOnNetworkThread()
        for command in thread.takeCommands() {
            switch command {
            case .add(let transfer):
                guard transfer.takeIn(by: thread, at: clock) else { break }
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
    mutating func takeEasyHandle() -> CurlEasyHandle? {
        assertOnNetworkThread()
        return pool.popLast() ?? CurlEasyHandle(share: thread.share)
    }

    /// Keeps a handle, reset, for the next transfer.
    mutating func recycle(_ easy: CurlEasyHandle) {
        assertOnNetworkThread()
        guard pool.count < NetworkThread.maxPooledHandles else { return }
        easy.owner = nil   // its transfer is over
        easy.reset()
        pool.append(easy)
    }

    private func publishStatistics() {
        let multi = thread.multi
        thread.publish(NetworkThread.Statistics(
            active: active.count, waiting: waiting.count - waitingHead + origins.heldCount,
            pooledHandles: pool.count, connections: thread.idleConnections.sockets.count,
            multiHandleReplacements: multi.replacements, badMultiHandleAnswers: multi.badHandleAnswers))
    }
}

// MARK: - Hops curl reports done, transfers that end, and the turn's events

extension NetworkLoop {
    /// Carries out what each transfer decides about its hop that curl reports done.
    mutating func readFinished() {
        assertOnNetworkThread()
        while let done = thread.multi.nextDone() {
            thread.multi.remove(done.easy)
            guard let transfer = transfer(on: done.easy), takeOffCurl(transfer), let easy = transfer.easy else { continue }
            switch transfer.hopEnded(code: done.result, on: easy, http1Origins: origins.serial) {
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
    private mutating func sendNextHop(_ transfer: Transfer, easy: CurlEasyHandle) -> TransferOutcome? {
        easy.reset()
        do {
            try transfer.configure(easy)
        } catch {
            return .failed(error)
        }
        guard thread.multi.add(easy.raw) else {
            return .failed(TransportError.make(.unknown, "libcurl refused the next hop.", url: transfer.currentRequest.url))
        }
        putOnCurl(transfer, easy: easy)
        return nil
    }

    /// Ends a transfer on this thread; its delegate hears of it with the turn's other events.
    mutating func end(_ transfer: Transfer, _ outcome: TransferOutcome) {
        assertOnNetworkThread()
        guard let delegate = transfer.finish() else { return }
        thread.idleConnections.transferEnded()
        events.append(.ended(transfer, outcome, delegate))
    }

    /// Hands this turn's events to the delivery queue in one dispatch, in the order they happened.
    mutating func flushEvents() {
        assertOnNetworkThread()
        guard !events.isEmpty else { return }
        let batch = events
        events = []
        CallbackQueues.delivery.async { TransferEvent.deliver(batch) }
    }
}
