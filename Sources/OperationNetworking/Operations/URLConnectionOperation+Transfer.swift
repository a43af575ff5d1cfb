import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - TransferDelegate (network thread; start and end on the delivery queue)

extension URLConnectionOperation: TransferDelegate {
    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        let (block, added, trace) = state.withLock {
            ($0.configuration.redirectBlock, $0.run.cache?.machine.addedFields ?? [], $0.run.trace)
        }
        // The block and `currentRequest` see the request without the fields the cache added to revalidate
        // or the span's (which the next hop sends all the same).
        var proposed = request
        for field in added { proposed.setValue(nil, forHTTPHeaderField: field.name) }
        for field in trace?.fields ?? [] { proposed.setValue(nil, forHTTPHeaderField: field.name) }
        guard var chosen = block.map({ $0(self, proposed, response) }) ?? proposed else { return nil }
        let kept = state.withLock { state -> [(name: String, value: String)] in
            state.run.currentRequest = chosen
            guard let target = chosen.url else { return [] }
            return state.run.cache?.machine.redirected(to: target) ?? []
        }
        for (name, value) in kept { chosen.setValue(value, forHTTPHeaderField: name) }
        trace?.apply(to: &chosen)
        return chosen
    }

    func transfer(_ transfer: Transfer, needsNewBodyStreamFor request: URLRequest) -> InputStream? {
        // Read under the lock, called without it, as the redirect block is.
        let block = state.withLock { $0.configuration.needNewBodyStreamBlock }
        return block?(self, request)
    }

    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        let resolution = resolve(challenge)
        // Answered, the next request carries credentials: the cache stores its response only as RFC 9111 §3.5 says.
        if case .answer = resolution, !challenge.isProxy { state.withLock { $0.run.cache?.machine.challengeAnswered() } }
        return resolution
    }

    /// How the operation answers `challenge`: its block, or the default handling.
    private func resolve(_ challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        let (configuration, original) = state.withLock { ($0.configuration, $0.request.url) }
        let (block, credential, proxyCredential, useStorage) = (configuration.challengeBlock, configuration.credential,
                                                                configuration.proxyCredential,
                                                                configuration.shouldUseCredentialStorage)
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
        let observers = state.withLock { state in
            state.run.head = head
            state.run.response = nil
            return state.observers
        }
        // Network thread: monitors hear of it from the delivery queue, queued before this transfer's end.
        if let observers, observers.wantsResponses {
            CallbackQueues.delivery.async { [self] in observers.didReceive(head, for: self) }
        }
    }

    func transfer(_ transfer: Transfer, willDeliver head: ResponseHead) -> ResponseDisposition {
        self.transfer(transfer, didReceive: head)
        let (block, revalidated) = state.withLock { state in
            (state.configuration.didReceiveResponseBlock,
             head.statusCode == 304 && state.run.cache?.machine.isRevalidating == true)
        }
        // The library's own classes do not override the method: with no block, nobody would be asked,
        // and no `HTTPURLResponse` need be built here, on the network thread every transfer shares.
        let ownClass = type(of: self) == URLConnectionOperation.self || type(of: self) == HTTPRequestOperation.self
        // A 304 to the cache's own revalidation is not what the caller gets: the stored response is.
        guard block != nil || !ownClass, !revalidated, let response = response as? HTTPURLResponse else { return .allow }
        return operationDidReceiveResponse(response)
    }

    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {
        let reporter = state.withLock { $0.progressReporter(download: true, of: self) }
        reporter?.record(bytes: count, total: totalBytes, expected: expectedBytes)
    }

    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {
        let reporter = state.withLock { $0.progressReporter(download: false, of: self) }
        reporter?.record(bytes: count, total: totalBytes, expected: expectedBytes)
    }

    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        let observers = state.withLock { state -> OperationObservers? in
            guard transfer === state.run.transfer else { return nil }
            state.run.attempts = max(state.run.attempts, attempt)
            return state.observers
        }
        observers?.willRetry(self, after: delay, attempt: attempt, error: error)
    }

    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        // A pause that continues at once makes a new transfer: its policy snapshot is taken first.
        var security: SecurityPolicy.Snapshot?
        if case .paused = outcome { security = securitySnapshot() }
        let (step, settlement) = state.withLock { state -> (Step?, OneTimeSignal?) in
            guard transfer === state.run.transfer else { return (nil, nil) }   // an earlier run's transfer
            state.run.attempts = max(state.run.attempts, transfer.attempt)
            state.run.bodyBytesDelivered = transfer.bytesReceived   // for monitors, whatever the sink
            if let metrics = transfer.metrics { state.run.metrics = metrics }
            if state.run.head == nil, let head = transfer.head { state.run.head = head }
            // However a pause ended (settled, continued, cancelled, overtaken by the transfer's end), an
            // archiver waiting for it is told, after the lock is released, and reads the phase again.
            let settlement = state.run.pauseSettlement
            state.run.pauseSettlement = nil
            guard case .paused(let point) = outcome else {
                if transfer.settings.retriesThroughOwner { return (interceptedEnd(&state, transfer, outcome), settlement) }
                return (advance(&state, ending: (outcome, transfer)) { $0.transferEnded() }, settlement)
            }
            let kept = KeptDownload(point: point, bytes: state.outputStream == nil ? transfer.body : Data())
            return (advance(&state, security: security) { $0.transferPaused(kept) }, settlement)
        }
        perform(step, batch: batch)
        settlement?.settle()
    }
}

extension URLConnectionOperation {
    /// The run's answer made without the network (`OperationState.answeredWithoutNetwork(_:)`) arrived on
    /// the delivery queue: it ends the run as a transfer's end does, through the same event and the
    /// same end (as a cancel when a `cancel()` came first). A run without a transfer moved no bytes.
    func runAnswered(_ answer: TransferOutcome, batch: CompletionBatch) {
        let (step, settlement) = state.withLock { state -> (Step?, OneTimeSignal?) in
            state.run.bodyBytesDelivered = 0
            // A pause made meanwhile is overtaken by the answer, as by a transfer's end: its archiver is told.
            let settlement = state.run.pauseSettlement
            state.run.pauseSettlement = nil
            return (advance(&state, ending: (answer, nil)) { $0.transferEnded() }, settlement)
        }
        perform(step, batch: batch)
        settlement?.settle()
    }
}

/// The sender a `URLAuthenticationChallenge` needs; answers come back through the block's return value.
/// - Threading: stateless (its methods do nothing); any thread.
private final class ChallengeSender: NSObject, URLAuthenticationChallengeSender, @unchecked Sendable {   // stateless
    static let shared = ChallengeSender()
    func use(_ credential: URLCredential, for challenge: URLAuthenticationChallenge) {}
    func continueWithoutCredential(for challenge: URLAuthenticationChallenge) {}
    func cancel(_ challenge: URLAuthenticationChallenge) {}
    func performDefaultHandling(for challenge: URLAuthenticationChallenge) {}
    func rejectProtectionSpaceAndContinue(with challenge: URLAuthenticationChallenge) {}
}

// MARK: - A new body stream (NSURLConnection's connection:needNewBodyStream:)

extension URLConnectionOperation {
    /// Asked for a new stream of the request body when a redirect that keeps it (`307`, `308`, or a
    /// `301`/`302` of another method than POST) or an answered `401`/`407` challenge must send it
    /// again and the body is a stream of yours, already read. Gets the operation and the request about
    /// to be sent; returns an unopened stream of the same bytes, or `nil`.
    public typealias NeedNewBodyStreamBlock = @Sendable (URLConnectionOperation, URLRequest) -> InputStream?

    /// Sets the block asked for a new request body stream (NSURLConnection's
    /// `connection:needNewBodyStream:`; AFN answered it by copying its multipart stream). Runs on the
    /// network thread, like the redirect block, after the redirect or challenge block decided: keep it
    /// short. A body the library can make again (data, or multipart from data and files) is sent again
    /// without it. Default `nil`: a stream that cannot be made again fails the operation with
    /// `URLError(.requestBodyStreamExhausted)`, as does a block that returns `nil`.
    @preconcurrency
    public func setNeedNewBodyStreamBlock(_ block: NeedNewBodyStreamBlock?) {
        self[setting: \.needNewBodyStreamBlock] = block
    }
}

// MARK: - Between the head and the body (NSURLConnection's connection:didReceiveResponse:)

extension URLConnectionOperation {
    /// What happens to a response whose head arrived, decided before any byte of its body is written
    /// (see `operationDidReceiveResponse(_:)`).
    /// - Threading: an immutable value; the caller's block returns it on the network thread.
    public enum ResponseDisposition: Sendable {
        /// Deliver the body as the library does by default. After your own `Range` that the server
        /// answered with a whole `200`, that is the whole body from its first byte: in `responseData`,
        /// or written to `outputStream` after whatever the stream already holds. After a paused
        /// download's `Range` answered the same way, memory starts over, and an output stream is given
        /// the bytes past those it holds when the resource kept its `ETag`/`Last-Modified` (the
        /// operation fails with `URLError(.cannotWriteToFile)` when it changed).
        case allow
        /// The output starts over: the body is written whole from its first byte, the bytes a paused
        /// download kept in memory are dropped, nothing is skipped or checked against them, and the
        /// download progress counts from zero. The library cannot empty a stream: truncate the file
        /// behind your `outputStream` (one opened with `append: true`, so writes go to its end)
        /// before you return this.
        case restartOutput
        /// Fail the operation with this error, as it is: no byte of the body reaches `responseData` or
        /// `outputStream`, the failure handler gets the error (`response` is the refused response),
        /// and no `RetryPolicy` sends the request again.
        case fail(any Error)
    }

    /// Decides about a response before its body (see `setDidReceiveResponseBlock(_:)`).
    public typealias DidReceiveResponseBlock = @Sendable (URLConnectionOperation, HTTPURLResponse) -> ResponseDisposition

    /// Sets the block `operationDidReceiveResponse(_:)` asks (NSURLConnection's
    /// `connection:didReceiveResponse:`, which AFN's subclasses overrode): it gets the operation and the
    /// response the caller gets, once its head arrived and before the first byte of its body is written
    /// (so before the first download-progress call), and says whether and how the body is delivered.
    /// Asked for each response a run delivers — a paused download's continuation is asked again —
    /// never for a redirect that is followed, a `401`/`407` that is answered or a status the
    /// `RetryPolicy` sends again, and not when the response comes from `urlCache` (a stored response
    /// answering, or the `304` that revalidated it).
    /// Runs on the network thread, synchronously, like the redirect block: keep it short, and never
    /// wait for an operation in it. Default `nil`: every body is delivered (`.allow`).
    @preconcurrency
    public func setDidReceiveResponseBlock(_ block: DidReceiveResponseBlock?) {
        self[setting: \.didReceiveResponseBlock] = block
    }
}

// MARK: - Output stream and notifications

extension URLConnectionOperation {
    /// How the transfer about to start for `request` ends without the network because the caller's
    /// output stream (`stream`, still to open) would not open. `nil`: it goes to the network.
    func streamOutcome(for request: URLRequest, opening stream: OutputStream?) -> TransferOutcome? {
        guard let stream else { return nil }
        if stream.streamStatus == .notOpen { stream.open() }
        guard stream.streamStatus != .error else {
            return .failed(stream.streamError ?? TransportError.make(.cannotWriteToFile, "The output stream could not be opened.",
                                                                     url: request.url))
        }
        return nil
    }

    /// Posts from the library's callback queue: at once when already on it, else asynchronously.
    func post(_ name: Notification.Name) {
        if CallbackQueues.isOnCallbackQueue {
            NotificationCenter.default.post(name: name, object: self)
            return
        }
        CallbackWork.shared.async(group: nil) { [self] in
            NotificationCenter.default.post(name: name, object: self)
        }
    }
}

extension URLConnectionOperation {
    /// When to send the request again after a retryable failure or status (see `RetryPolicy`).
    /// Default `.none`: one attempt, as AFNetworking. Set it before the operation starts; the manager
    /// sets its own on each operation it creates. `copy()` keeps it.
    public var retryPolicy: RetryPolicy {
        get { self[setting: \.retryPolicy] }
        set { self[setting: \.retryPolicy] = newValue }
    }

    /// The attempts made so far: 0 before the operation started, 1 for a request sent once, more when
    /// `retryPolicy` sent it again (the count includes an attempt still waiting out its delay).
    public var attempts: Int { state.withLock { $0.run.attempts } }
}

/// Counts finished members of a batch, from whichever completion queue each one finishes on.
/// - Threading: the count is owned by a `Protected`; any thread (each member's completion queue).
private final class BatchCounter: Sendable {
    private let finished = Protected(0)

    func next() -> Int {
        finished.withLock {
            $0 += 1
            return $0
        }
    }
}

extension URLConnectionOperation {
    /// AFN's `batchOfRequestOperations:progressBlock:completionBlock:`: returns `operations` plus one
    /// last operation that depends on all of them and calls `completion` after every member's own
    /// completion handling ran. Nothing is enqueued: add the returned array to a queue.
    ///
    /// `progress(finished, total)` runs once per member, on that member's completion queue, after its
    /// handlers and before it turns finished, with `finished` counting 1, 2, … total (strictly in order
    /// when the members share a serial completion queue, as with the default).
    /// `completion` runs on the first member's completion queue (the library's callback queue by default).
    @preconcurrency
    public static func batch(of operations: [URLConnectionOperation],
                             progress: (@Sendable (Int, Int) -> Void)?,
                             completion: (@Sendable ([URLConnectionOperation]) -> Void)?) -> [Operation] {
        let queue = operations.first?.effectiveCompletionQueue ?? CallbackQueues.callback
        let total = operations.count
        let counter = BatchCounter()
        let batchOperation = BlockOperation {
            CallbackQueues.async(on: queue) { completion?(operations) }
        }
        for operation in operations {
            operation.addFinishHook { progress?(counter.next(), total) }
            batchOperation.addDependency(operation)
        }
        return operations + [batchOperation]
    }
}
