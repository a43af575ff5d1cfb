import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: the transitions the network thread drives

extension Transfer {
    /// What the network thread does once curl reports the current hop done.
    enum HopEndAction {
        /// Recycle the handle and end the transfer with this outcome.
        case finish(TransferOutcome)
        /// Send the next hop (a redirect to follow, a challenge to answer, or the current request
        /// again when its server never processed it: `Transfer+Resend.swift`) on the same handle.
        case sendNextHop
        /// Recycle the handle and send the request again after `delay` seconds (`RetryPolicy`); `error`
        /// is the transport failure, or `nil` for a retryable status.
        case retry(after: TimeInterval, error: Error?)
    }

    /// The easy handle while the transfer is on curl.
    var easy: CurlEasyHandle? {
        assertOnNetworkThread()
        guard case .active = state.phase else { return nil }
        return current.easy
    }

    /// `created → waiting`: the network thread takes the transfer in (and notes itself and the time).
    /// False when a cancel or pause from another thread overtook the add (the transfer already ended).
    func takeIn(by network: NetworkThread, at now: UInt64) -> Bool {
        assertOnNetworkThread()
        self.network = network
        startTime = now
        queuedSince = now
        return perform(state.takeIn())
    }

    /// `waiting → active`: configures `easy` for the first hop. On a throw the handle is not the
    /// transfer's and the transfer must end with the error.
    func admit(on easy: CurlEasyHandle) throws {
        assertOnNetworkThread()
        try configure(easy)
        // The time spent waiting counts: the no-progress timeout runs from when the request was queued,
        // so a request held behind others to a dead endpoint does not wait for their timeouts first.
        hop.lastActivity = min(hop.lastActivity, queuedSince)
        current.easy = easy
        _ = perform(state.admit())
    }

    /// `any → finished`: ends the transfer and hands back its delegate, to be told of the outcome once;
    /// `nil` when the transfer had already ended. The transfer drops its own reference to the delegate.
    func finish() -> TransferDelegate? {
        let delegate = self.delegate
        return perform(state.finish()) ? delegate : nil
    }

    /// Leaves curl early (cancel, pause, stall): the handle to take off curl and recycle, if the
    /// transfer had one, with its metrics read first. `finish()` follows at once.
    func leaveCurlEarly() -> CurlEasyHandle? {
        assertOnNetworkThread()
        guard let easy else { return nil }
        collectMetrics(from: easy)
        return easy
    }

    /// `active → delaying`: off curl until the next attempt is due; the monotonic time it is.
    func delay(for seconds: TimeInterval, now: UInt64) -> UInt64 {
        let until = now &+ UInt64(max(0, min(seconds, 1e6)) * 1e9)
        _ = perform(state.delay(until: until))
        return until
    }

    /// `delaying → waiting`: the next attempt starts from a fresh `Attempt` on the original request (a
    /// multipart body the serializer built is rebuilt), queued at `now`. False when the transfer ended
    /// meanwhile (cancelled or paused during the delay).
    func beginNextAttempt(now: UInt64) -> Bool {
        queuedSince = now
        return perform(state.wake())
    }

    /// Whether the transfer, waiting without a handle, has waited longer than its timeout at `now`.
    func waitedTooLong(now: UInt64) -> Bool {
        guard case .waiting = state.phase else { return false }
        return now > queuedSince && now - queuedSince > timeoutNanoseconds
    }

    /// Carries out what an event of `state` returned; false when the event was ignored.
    private func perform(_ action: TransferState.Action) -> Bool {
        switch action {
        case .ignore:
            return false
        case .proceed:
            return true
        case .releaseHandle:
            current.easy = nil
            return true
        case .beginNextAttempt:
            if let multipart = originalRequest.httpBodyStream as? MultipartBodyStream {
                originalRequest.httpBodyStream = multipart.rebuilt()
            }
            current = Attempt(number: current.number + 1, request: originalRequest)
            return true
        case .end:
            current.easy = nil
            hop.upload?.close()
            delegate = nil
            return true
        }
    }

    /// curl finished the current hop with `code` (the handle is already off the multi handle):
    /// end the transfer (`finish()` follows, the handle is recycled), or go on with a redirect or a
    /// challenge answer on the same handle.
    func hopEnded(code: CURLcode, on easy: CurlEasyHandle) -> HopEndAction {
        assertOnNetworkThread()
        collectMetrics(from: easy)
        // Cancelled while curl ran the hop (the pre-request callback may have stopped it): a cancel.
        if isCancelRequested { return .finish(.cancelled) }
        if let error = current.abortError { return current.abortIsFinal ? .finish(.failed(error)) : retryOrFinish(.failed(error)) }
        if code != CURLE_OK, resendsUnprocessed(code: code, easy: easy) { return .sendNextHop }
        if code != CURLE_OK, let refusal = proxyRefusalEnded(code: code, easy: easy) { return refusal }
        guard code == CURLE_OK else { return retryOrFinish(.failed(failure(code, easy: easy))) }
        switch hop.kind {
        case .redirect: return redirectEnded()
        case .challenge: return challengeEnded()
        case .unusableNotModified: return unusableNotModifiedEnded()
        case .awaitingHead: return .finish(.completed)
        case .retryable:
            if let delay = retryDelayForStatus() { return .retry(after: delay, error: nil) }
            return .finish(deliverSetAside())
        case .delivering:
            if let shortfall = bodyShortfall(easy) { return retryOrFinish(.failed(shortfall)) }
            if let required = hop.requiredBodyEnd, bytesReceived != required {
                return .finish(.failed(TransportError.make(
                    .networkConnectionLost, "The continued download ended at byte \(bytesReceived) of \(required).",
                    url: currentRequest.url)))
            }
            if let unfinished = unfinishedCompression() { return retryOrFinish(.failed(unfinished)) }
            return .finish(.completed)
        }
    }
}
