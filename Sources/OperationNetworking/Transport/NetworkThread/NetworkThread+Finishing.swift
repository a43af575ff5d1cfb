import CCurl
import CCurlShim
import Foundation

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
        guard !events.isEmpty else { return }
        let batch = events
        events = []
        CallbackQueues.delivery.async { TransferEvent.deliver(batch) }
    }
}
