import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - TransferDelegate (network thread; start and end on the delivery queue)

extension URLConnectionOperation: TransferDelegate {
    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        let block = lock.withLock { redirectBlock }
        let chosen = block.map { $0(self, request, response) } ?? request
        if let chosen { lock.withLock { storedCurrentRequest = chosen } }
        return chosen
    }

    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        let (block, credential, useStorage, original) = lock.withLock {
            (challengeBlock, storedCredential, storedShouldUseCredentialStorage, storedRequest.url)
        }
        let url = challenge.head.url
        let space: URLProtectionSpace
        if challenge.isProxy {
            space = URLProtectionSpace(proxyHost: url.host ?? "", port: url.port ?? 0, type: url.scheme, realm: challenge.realm,
                                       authenticationMethod: challenge.method)
        } else {
            space = URLProtectionSpace(host: url.host ?? "", port: url.port ?? (url.scheme == "https" ? 443 : 80),
                                       protocol: url.scheme, realm: challenge.realm, authenticationMethod: challenge.method)
        }
        // The operation's own credential belongs to the origin of its request, never to another one.
        let sameOrigin = challenge.isProxy || Transfer.sameOrigin(original, url)
        let sources = [sameOrigin ? credential : nil,
                       useStorage ? URLConnectionOperation.storedCredential(for: space) : nil].compactMap { $0 }
        func defaultHandling() -> ChallengeResolution {
            guard challenge.previousFailureCount < sources.count,
                  let user = sources[challenge.previousFailureCount].user else { return .deliver }
            return .answer(user: user, password: sources[challenge.previousFailureCount].password ?? "")
        }
        guard let block else { return defaultHandling() }
        let response = challenge.head.makeResponse()
        let question = URLAuthenticationChallenge(protectionSpace: space, proposedCredential: sources.first,
                                                  previousFailureCount: challenge.previousFailureCount,
                                                  failureResponse: response, error: nil, sender: ChallengeSender.shared)
        let (disposition, answer) = block(self, question)
        switch disposition {
        case .useCredential:
            guard let user = answer?.user else { return .deliver }
            return .answer(user: user, password: answer?.password ?? "")
        case .performDefaultHandling:
            return defaultHandling()
        case .cancelAuthenticationChallenge:
            return .cancel
        case .rejectProtectionSpace:
            return .deliver
        @unknown default:
            return .deliver
        }
    }

    /// The default credential `URLCredentialStorage.shared` holds for a protection space equal to
    /// `space`. Found by comparing fields: corelibs' `URLProtectionSpace` compares by identity, so
    /// `defaultCredential(for:)` never matches a newly built space.
    static func storedCredential(for space: URLProtectionSpace) -> URLCredential? {
        let storage = URLCredentialStorage.shared
        for (stored, credentials) in storage.allCredentials
        where stored.host.lowercased() == space.host.lowercased() && stored.port == space.port
            && stored.protocol?.lowercased() == space.protocol?.lowercased() && stored.realm == space.realm
            && stored.authenticationMethod == space.authenticationMethod && stored.isProxy() == space.isProxy() {
            return storage.defaultCredential(for: stored) ?? (credentials.count == 1 ? credentials.values.first : nil)
        }
        return nil
    }

    func transfer(_ transfer: Transfer, didReceive head: ResponseHead) {
        lock.withLock {
            storedHead = head
            storedResponse = nil
        }
        // Network thread: monitors hear of it from the delivery queue, queued before this transfer's end.
        if observers.wantsResponses {
            CallbackQueues.delivery.async { [self] in observers.didReceive(head, for: self) }
        }
    }

    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {
        lock.withLock { downloadReporter }?.record(bytes: count, total: totalBytes, expected: expectedBytes)
    }

    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {
        lock.withLock { uploadReporter }?.record(bytes: count, total: totalBytes, expected: expectedBytes)
    }

    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        let current: Bool = lock.withLock {
            guard transfer === self.transfer else { return false }
            storedAttempts = max(storedAttempts, attempt)
            return true
        }
        if current { observers.willRetry(self, after: delay, attempt: attempt, error: error) }
    }

    func transferDidStart(_ transfer: Transfer, batch: CompletionBatch) {
        lock.withLock { if storedAttempts == 0 { storedAttempts = 1 } }
        observers.transferDidStart(self)
        batch.add(on: CallbackQueues.callback, group: CallbackQueues.group) { [self] in
            NotificationCenter.default.post(name: .operationDidStart, object: self)
        }
    }

    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        var next: Transfer?
        let ended: Bool = lock.withLock {
            guard transfer === self.transfer else { return false }
            storedAttempts = max(storedAttempts, transfer.attempt)
            if let metrics = transfer.metrics { storedMetrics = metrics }
            if storedHead == nil, let head = transfer.head { storedHead = head }
            switch outcome {
            case .paused(let point):
                resumePoint = point
                if storedOutputStream == nil { partialData = transfer.body }
                if state.transferPaused() == .startTransfer { next = makeTransfer() }
                return false
            case .completed:
                if storedOutputStream == nil { storedResponseData = transfer.body }
            case .completedWithError(let error):
                if storedOutputStream == nil { storedResponseData = transfer.body }
                storedError = error
            case .failed(let error):
                storedError = error
            case .cancelled:
                storedError = TransportError.cancelled(url: storedRequest.url)
            }
            return state.transferEnded()
        }
        observers.bodyBytes = transfer.bytesReceived   // for monitors, whatever the sink
        if case .paused = outcome { pauseSettled.broadcastUnderLock() }   // only archiving waits for this
        if let next { NetworkThread.shared.submit(.add(next)) }   // its start is posted when the thread takes it in
        if ended { transferDidEnd(batch: batch) }
    }
}

/// The sender a `URLAuthenticationChallenge` needs; answers come back through the block's return value.
private final class ChallengeSender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {   // stateless
    static let shared = ChallengeSender()
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}
