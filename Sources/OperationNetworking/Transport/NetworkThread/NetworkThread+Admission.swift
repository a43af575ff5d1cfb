import CCurl
import CCurlShim
import Foundation

// MARK: - Network thread: admitting waiting transfers, and ending them early

extension NetworkThread {
    /// Starts waiting transfers, oldest first, while slots are free.
    func admitWaiting() {
        assertOnNetworkThread()
        while active.count < activeLimit && waitingHead < waiting.count {
            let transfer = waiting[waitingHead]
            waitingHead += 1
            guard case .waiting = transfer.state.phase, !holdsForProbe(transfer) else { continue }
            start(transfer)
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead > 4096 {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    /// Gives a transfer an easy handle and puts it on curl; a failure ends the transfer.
    private func start(_ transfer: Transfer) {
        // A cancel made while it waited: its command may still be in the inbox, but its request must not start.
        guard !transfer.isCancelRequested else {
            end(transfer, .cancelled)
            return
        }
        guard let easy = takeEasyHandle() else {
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
        guard multi.add(easy.raw) else {
            recycle(easy)
            end(transfer, .failed(TransportError.make(.unknown, "libcurl refused the transfer.",
                                                        url: transfer.currentRequest.url)))
            return
        }
        putOnCurl(transfer, easy: easy)
        probeIfUnknown(transfer)
    }

    /// Ends a transfer early (cancel, pause, stall), wherever it is. A waiting transfer stays in the
    /// FIFO and is skipped when its turn comes.
    func stop(_ transfer: Transfer, with outcome: TransferOutcome) {
        assertOnNetworkThread()
        if let easy = transfer.leaveCurlEarly() {
            multi.remove(easy.raw)
            takeOffCurl(transfer)
            recycle(easy)
        }
        end(transfer, outcome)
    }

    /// Fails transfers with no bytes moving for longer than their request's `timeoutInterval`, and
    /// those that waited that long without a handle (in the FIFO, or held for their origin's probe):
    /// a request's timeout runs from when it was queued, so the k-th request to a dead endpoint ends
    /// at its own timeout rather than after k of them.
    func failStalled(now: UInt64) {
        // lastActivity may lie ahead: a throttled upload counts its planned pause as activity.
        let stalled = active.filter { now > $0.latestActivity && now - $0.latestActivity > $0.timeoutNanoseconds }
        for transfer in stalled {
            let error = TransportError.make(.timedOut, "No data moved for \(transfer.currentRequest.timeoutInterval) s.",
                                            url: transfer.currentRequest.url)
            stop(transfer, with: .failed(error))
        }
        // An ended transfer stays in its list and is skipped when its turn comes (see `stop`).
        let queued = waiting[waitingHead...].filter { $0.waitedTooLong(now: now) }
            + origins.held.values.joined().filter { $0.waitedTooLong(now: now) }
        for transfer in queued {
            let error = TransportError.make(.timedOut, "The request waited \(transfer.currentRequest.timeoutInterval) s "
                                            + "without a connection.", url: transfer.currentRequest.url)
            stop(transfer, with: .failed(error))
        }
    }

    /// Puts transfers whose retry delay is over back in the FIFO (a cancel or pause during the delay
    /// already ended them: those are dropped).
    func requeueDueRetries(now: UInt64) {
        guard !delayed.isEmpty else { return }
        let due = delayed.filter { $0.at <= now }
        guard !due.isEmpty else { return }
        delayed.removeAll { $0.at <= now }
        for entry in due where entry.transfer.beginNextAttempt(now: now) {
            waiting.append(entry.transfer)
        }
    }

    /// Called from a read callback (network thread) when a throttled body must wait until `at`.
    func resumeUpload(_ transfer: Transfer, at: UInt64) {
        assertOnNetworkThread()
        pausedUploads.append((transfer, at))
    }

    /// Unpauses throttled uploads whose delay is over (`curl_easy_pause` may call the read callback).
    func resumeDueUploads(now: UInt64) {
        guard !pausedUploads.isEmpty else { return }
        let due = pausedUploads.filter { $0.at <= now }
        pausedUploads.removeAll { $0.at <= now }
        for entry in due {
            if let easy = entry.transfer.easy { curl_easy_pause(easy.raw, CURLPAUSE_CONT) }
        }
    }
}
