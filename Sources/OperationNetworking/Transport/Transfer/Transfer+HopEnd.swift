import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: a redirect or challenge hop that curl reports done

extension Transfer {
    /// A followable 3xx is complete: follow it, deliver it, or fail.
    func redirectEnded() -> HopEndAction {
        switch redirectDecision() {
        case .follow(let request):
            if !Transfer.sameOrigin(currentRequest.url, request.url) { current.serverCredential = nil }
            current.request = request
            current.redirectCount += 1
            return .sendNextHop
        case .deliver:
            return .finish(deliverSetAside())
        case .fail(let error):
            return .finish(.failed(error))
        }
    }

    /// An answerable 401/407 is complete: the delegate decides (once per round) whether to send it
    /// again with a credential, deliver it, or cancel.
    func challengeEnded() -> HopEndAction {
        guard let head else { return .finish(.completed) }
        let info = challengeInfo(head)
        let resolution: ChallengeResolution = current.challengeRounds >= Transfer.maxChallengeRounds || info.schemes == 0
            ? .deliver : (delegate?.transfer(self, didReceiveChallenge: info) ?? .deliver)
        switch resolution {
        case .answer(let user, let password):
            guard let sent = withFreshBody(current.request) else { return .finish(.failed(bodyStreamExhausted(head.statusCode))) }
            current.request = sent
            let credential = TransferCredential(user: user, password: password, schemes: info.schemes)
            if info.isProxy { current.proxyCredential = credential } else { current.serverCredential = credential }
            current.challengeRounds += 1
            return .sendNextHop
        case .deliver:
            return .finish(deliverSetAside())
        case .cancel:
            _ = deliverSetAsideResponse()
            return .finish(.completedWithError(TransportError.make(
                .userCancelledAuthentication, "The authentication challenge was cancelled.", url: currentRequest.url)))
        }
    }

    /// A `304` the cache could not use is complete (RFC 9111 §4.3.4: it is about another response than
    /// the stored one): the request goes again at once without the conditional fields the cache added,
    /// also for a later attempt of the retry policy, and its response is the caller's.
    func unusableNotModifiedEnded() -> HopEndAction {
        for name in hop.droppedOnResend {
            current.request.setValue(nil, forHTTPHeaderField: name)
            originalRequest.setValue(nil, forHTTPHeaderField: name)
        }
        return .sendNextHop
    }

    /// The set-aside response becomes the caller's: completed, or failed if the sink refused it.
    func deliverSetAside() -> TransferOutcome {
        if let unfinished = unfinishedCompression() { return .failed(unfinished) }
        return deliverSetAsideResponse() ? .completed : .failed(current.abortError ?? TransportError.make(
            .cannotWriteToFile, "The output stream did not accept the response body.", url: currentRequest.url))
    }
}
