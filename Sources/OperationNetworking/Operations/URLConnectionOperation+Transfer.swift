import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - TransferDelegate (network thread; start and end on the delivery queue)

extension URLConnectionOperation: TransferDelegate {
    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        let block = lock.withLock { mutable.configuration.redirectBlock }
        let chosen = block.map { $0(self, request, response) } ?? request
        if let chosen { lock.withLock { mutable.currentRequest = chosen } }
        return chosen
    }

    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        let (block, credential, proxyCredential, useStorage, original) = lock.withLock {
            (mutable.configuration.challengeBlock, mutable.configuration.credential, mutable.configuration.proxyCredential,
             mutable.configuration.shouldUseCredentialStorage, mutable.request.url)
        }
        let url = challenge.head.url
        let space: URLProtectionSpace
        if challenge.isProxy {
            // The proxy's own space: a credential stored for the proxy is found there, not under the server.
            let proxy = challenge.proxyURL
            space = URLProtectionSpace(proxyHost: proxy?.host ?? url.host ?? "", port: proxy?.port ?? 1080,
                                       type: proxy?.scheme ?? url.scheme, realm: challenge.realm,
                                       authenticationMethod: challenge.method)
        } else {
            space = URLProtectionSpace(host: url.host ?? "", port: url.port ?? (url.scheme == "https" ? 443 : 80),
                                       protocol: url.scheme, realm: challenge.realm, authenticationMethod: challenge.method)
        }
        // The operation's own credential belongs to the origin of its request, never to another one.
        let sameOrigin = challenge.isProxy || Transfer.sameOrigin(original, url)
        let sources = [challenge.isProxy ? proxyCredential : nil, sameOrigin ? credential : nil,
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
        // The monitors read under the same acquisition as the head is stored (one lock a response, not two).
        let observers = lock.withLock {
            mutable.head = head
            mutable.response = nil
            return mutable.observers
        }
        // Network thread: monitors hear of it from the delivery queue, queued before this transfer's end.
        if let observers, observers.wantsResponses {
            CallbackQueues.delivery.async { [self] in observers.didReceive(head, for: self) }
        }
    }

    // Without a progress block ever set (most operations), a piece of body costs no lock: a setter
    // that returned has stored the flag, so every event after it reads it set.
    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {
        guard progressBlockEverSet.load(ordering: .acquiring) else { return }
        lock.withLock { progressReporter(download: true) }?.record(bytes: count, total: totalBytes, expected: expectedBytes)
    }

    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {
        guard progressBlockEverSet.load(ordering: .acquiring) else { return }
        lock.withLock { progressReporter(download: false) }?.record(bytes: count, total: totalBytes, expected: expectedBytes)
    }

    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        let current: Bool = lock.withLock {
            guard transfer === mutable.transfer else { return false }
            mutable.attempts = max(mutable.attempts, attempt)
            return true
        }
        if current { existingObservers?.willRetry(self, after: delay, attempt: attempt, error: error) }
    }

    func transferDidStart(_ transfer: Transfer, batch: CompletionBatch) {
        let observers = lock.withLock { () -> OperationObservers? in
            if mutable.attempts == 0 { mutable.attempts = 1 }
            return mutable.observers
        }
        observers?.transferDidStart(self)
        batch.add(on: CallbackQueues.callback, group: CallbackQueues.group) { [self] in
            NotificationCenter.default.post(name: .operationDidStart, object: self)
        }
    }

    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        let (action, next, archiver) = lock.withLock { () -> (OperationState.Action, Transfer?, NSCondition?) in
            guard transfer === mutable.transfer else { return (.none, nil, nil) }   // an earlier run's transfer
            mutable.attempts = max(mutable.attempts, transfer.attempt)
            mutable.bodyBytesDelivered = transfer.bytesReceived   // for monitors, whatever the sink
            if transfer.hasMetrics { mutable.metricsSource = transfer }
            if mutable.head == nil, let head = transfer.head { mutable.head = head }
            if case .paused(let point) = outcome {
                let kept = KeptDownload(point: point, bytes: mutable.outputStream == nil ? transfer.body : Data())
                let (action, next) = prepare(mutable.lifecycle.transferPaused(kept))
                return (action, next, mutable.pauseSettled)
            }
            let action = mutable.lifecycle.transferEnded()
            if case .deliver(let cancelled) = action { record(cancelled ? .cancelled : outcome, of: transfer) }
            return (action, nil, mutable.pauseSettled)
        }
        perform(action, transfer: next, batch: batch)
        // However a pause ended (settled, continued, cancelled, overtaken by the transfer's end), an
        // archiver waiting for it reads the phase again.
        archiver?.broadcastUnderLock()
    }

    /// Stores how the operation's transfer ended; call with `lock` held.
    private func record(_ outcome: TransferOutcome, of transfer: Transfer) {
        switch outcome {
        case .completed:
            if mutable.outputStream == nil { mutable.responseData = transfer.body }
        case .completedWithError(let error):
            if mutable.outputStream == nil { mutable.responseData = transfer.body }
            mutable.error = error
        case .answeredFromCache(let response, let data):
            mutable.head = nil
            mutable.response = response
            mutable.responseData = data
        case .failed(let error):
            mutable.error = error
        case .cancelled:
            mutable.recordCancel()   // a cancel won, whatever the transfer got
        case .paused:
            break   // handled before: a pause is not an end
        }
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
