import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: the transfer's states and the transitions the network thread drives

extension Transfer {
    /// Where a transfer is in its life. The network thread moves it along with the transitions below
    /// and carries out what they return; only `.active` holds an easy handle.
    ///
    /// ```
    /// created ──takeIn──▶ waiting ──admit──▶ active ──delay──▶ delaying
    ///    │                 │  ▲                │                  │
    ///    │                 │  └────────── beginNextAttempt ───────┘
    ///    └─────────────────┴──── finish ──────▶ finished ◀────────┘ (from any state but itself)
    /// ```
    enum State: CustomStringConvertible {
        /// Built and handed to `submit`; the network thread has not taken it in yet.
        case created
        /// In the network thread's FIFO, without an easy handle.
        case waiting
        /// On curl with this handle.
        case active(CurlEasyHandle)
        /// Between attempts (`RetryPolicy`): off curl until the monotonic time `until`, then waiting again.
        case delaying(until: UInt64)
        /// Over; its delegate is told once (`finish()`).
        case finished

        var description: String {
            switch self {
            case .created: return "created"
            case .waiting: return "waiting"
            case .active: return "active"
            case .delaying: return "delaying"
            case .finished: return "finished"
            }
        }
    }

    /// The transfer's state, and the one funnel every change of it goes through (curl's `mstate()`):
    /// `enter(_:)` checks the change is one the diagram allows and, in debug builds, keeps a trace of
    /// the last changes for the message of a failed check.
    /// - Threading: network thread only (the transfer's `lifecycle`).
    struct Lifecycle {
        private(set) var state: State = .created
        #if DEBUG
        /// The last states entered, oldest first (debug builds only).
        private(set) var trace: [String] = ["created"]
        #endif

        /// Moves to `next`; a change the diagram does not allow is a bug in the library.
        mutating func enter(_ next: State) {
            switch (state, next) {
            case (.created, .waiting), (.created, .finished),
                 (.waiting, .active), (.waiting, .finished),
                 (.active, .delaying), (.active, .finished),
                 (.delaying, .waiting), (.delaying, .finished):
                break
            case (.created, _), (.waiting, _), (.active, _), (.delaying, _), (.finished, _):
                preconditionFailure("Transfer: \(state) → \(next) is not a transition\(traceSuffix)")
            }
            state = next
            #if DEBUG
            trace.append(next.description)
            if trace.count > 16 { trace.removeFirst() }
            #endif
        }

        private var traceSuffix: String {
            #if DEBUG
            return " (trace: \(trace.joined(separator: " → ")))"
            #else
            return ""
            #endif
        }
    }

    /// Where the transfer is in its life.
    var state: State { lifecycle.state }

    /// What the response of the current hop turned out to be once its head arrived.
    enum Hop {
        /// No final head yet (nothing, or only 1xx blocks, arrived).
        case awaitingHead
        /// The response the caller gets: its body goes to the sink.
        case delivering
        /// A 3xx the library may follow: its body is set aside in case it becomes the response.
        case redirect
        /// A 401/407 the library may answer: its body is set aside likewise.
        case challenge
        /// A status the retry policy may send again (a 503, say): its body is set aside likewise.
        case retryable

        /// Whether body bytes go to `setAsideBody` rather than the sink.
        var setsBodyAside: Bool { self == .redirect || self == .challenge || self == .retryable }
    }

    /// What the network thread does once curl reports the current hop done.
    enum HopEndAction {
        /// Recycle the handle and end the transfer with this outcome.
        case finish(TransferOutcome)
        /// Send the next hop (a redirect to follow, a challenge to answer) on the same handle.
        case sendNextHop
        /// Send the current hop again on the same handle, on a connection of its own: the server never
        /// processed it (see `Transfer+Resend.swift`).
        case resendOnFreshConnection
        /// Recycle the handle and send the request again after `delay` seconds (`RetryPolicy`); `error`
        /// is the transport failure, or `nil` for a retryable status.
        case retry(after: TimeInterval, error: Error?)
    }

    /// The easy handle while the transfer is on curl.
    var easy: CurlEasyHandle? {
        assertOnNetworkThread()
        if case .active(let easy) = state { return easy }
        return nil
    }

    /// `created → waiting`: the network thread takes the transfer in. False when a cancel or pause
    /// from another thread overtook the add (the transfer already ended).
    func takeIn(by network: NetworkThread, at now: UInt64) -> Bool {
        assertOnNetworkThread()
        guard case .created = state else { return false }
        self.network = network
        startTime = now
        lifecycle.enter(.waiting)
        return true
    }

    /// `waiting → active`: configures `easy` for the first hop. On a throw the handle is not the
    /// transfer's and the transfer must end with the error.
    func admit(on easy: CurlEasyHandle) throws {
        assertOnNetworkThread()
        try configure(easy)
        lifecycle.enter(.active(easy))
    }

    /// `any → finished`: ends the transfer and hands back its delegate, to be told of the outcome once;
    /// `nil` when the transfer had already ended. The transfer drops its own reference to the delegate.
    func finish() -> TransferDelegate? {
        if case .finished = state { return nil }
        lifecycle.enter(.finished)
        upload?.close()
        defer { delegate = nil }
        return delegate
    }

    /// Leaves curl early (cancel, pause, stall): the handle to take off curl and recycle, if the
    /// transfer had one, with its metrics read first. `finish()` follows at once.
    func leaveCurlEarly() -> CurlEasyHandle? {
        assertOnNetworkThread()
        guard case .active(let easy) = state else { return nil }
        collectMetrics(from: easy)
        return easy
    }

    /// curl finished the current hop with `code` (the handle is already off the multi handle):
    /// end the transfer (`finish()` follows, the handle is recycled), or go on with a redirect or a
    /// challenge answer on the same handle.
    func hopEnded(code: CURLcode, on easy: CurlEasyHandle) -> HopEndAction {
        assertOnNetworkThread()
        collectMetrics(from: easy)
        // Cancelled while curl ran the hop (the pre-request callback may have stopped it): a cancel.
        if isCancelRequested { return .finish(.cancelled) }
        if let error = abortError { return retryOrFinish(.failed(error)) }
        if code != CURLE_OK, resendsUnprocessed(code: code, easy: easy) { return .resendOnFreshConnection }
        if code != CURLE_OK, let refusal = proxyRefusalEnded(code: code, easy: easy) { return refusal }
        guard code == CURLE_OK else { return retryOrFinish(.failed(failure(code, easy: easy))) }
        switch hop {
        case .redirect: return redirectEnded()
        case .challenge: return challengeEnded()
        case .awaitingHead: return .finish(.completed)
        case .retryable:
            if let delay = retryDelayForStatus() { return .retry(after: delay, error: nil) }
            return .finish(deliverSetAside())
        case .delivering:
            if let shortfall = bodyShortfall(easy) { return retryOrFinish(.failed(shortfall)) }
            if let required = requiredBodyEnd, bytesReceived != required {
                return .finish(.failed(TransportError.make(
                    .networkConnectionLost, "The continued download ended at byte \(bytesReceived) of \(required).",
                    url: currentRequest.url)))
            }
            if let unfinished = unfinishedCompression() { return retryOrFinish(.failed(unfinished)) }
            return .finish(.completed)
        }
    }

    /// A compressed body whose stream never reached its end: every announced byte may have arrived,
    /// yet the body is cut (libcurl 7.88 does not check this itself).
    private func unfinishedCompression() -> URLError? {
        guard let decoder, !decoder.isComplete else { return nil }
        return TransportError.make(.cannotDecodeContentData, "The compressed response body ended before its end.",
                                   url: currentRequest.url)
    }

    // MARK: Retry

    /// Whether another attempt may be made at all: attempts left, a method the policy allows, a body
    /// that can be sent again, no bytes given to a caller's stream, not a resumed download.
    private var mayRetry: Bool {
        guard attempt < retryPolicy.maxAttempts, resumeFrom == nil,
              retryPolicy.retryableMethods.contains(originalRequest.uppercasedMethod) else { return false }
        if outputStream != nil && bytesReceived > 0 { return false }
        guard let stream = originalRequest.httpBodyStream else { return true }
        return (stream as? MultipartBodyStream)?.canBeRebuilt ?? false   // a caller's own stream: never
    }

    /// A failed attempt: retried when its error is one the policy names, else the transfer ends.
    private func retryOrFinish(_ outcome: TransferOutcome) -> HopEndAction {
        guard case .failed(let error) = outcome, mayRetry, let code = (error as? URLError)?.code,
              retryPolicy.retryableErrorCodes.contains(code) else { return .finish(outcome) }
        return .retry(after: retryPolicy.backoff(after: attempt), error: error)
    }

    /// The delay before retrying a retryable status, or `nil` to deliver it: no attempts left, or a
    /// `Retry-After` beyond the policy's `maxDelay`.
    private func retryDelayForStatus() -> TimeInterval? {
        guard mayRetry else { return nil }
        if retryPolicy.respectsRetryAfter, let header = head?.value(for: "Retry-After"),
           let requested = RetryPolicy.retryAfter(header) {
            return requested <= retryPolicy.maxDelay ? requested : nil
        }
        return retryPolicy.backoff(after: attempt)
    }

    /// Whether a final response with `status` is one the policy may retry (its body is then set aside).
    /// The attempt count first: with the operation's default policy (one attempt) that answers it, where
    /// hashing the status into the set cost about 160 instructions a response.
    func isRetryableStatus(_ status: Int) -> Bool {
        attempt < retryPolicy.maxAttempts && retryPolicy.retryableStatusCodes.contains(status) && mayRetry
    }

    /// `active → delaying`: off curl until the next attempt is due.
    func delay(for seconds: TimeInterval, now: UInt64) -> UInt64 {
        let until = now &+ UInt64(max(0, min(seconds, 1e6)) * 1e9)
        lifecycle.enter(.delaying(until: until))
        return until
    }

    /// `delaying → waiting`: everything of the last attempt is dropped and the original request is
    /// sent again (a multipart body the serializer built is rebuilt). False when the transfer ended
    /// meanwhile (cancelled or paused during the delay).
    func beginNextAttempt() -> Bool {
        guard case .delaying = state else { return false }
        attempt += 1
        var request = originalRequest
        if let multipart = request.httpBodyStream as? MultipartBodyStream {
            request.httpBodyStream = multipart.rebuilt()
            originalRequest = request
        }
        currentRequest = request
        head = nil
        body = Data()
        bytesReceived = 0
        expectedBodyLength = -1
        setAsideBody = Data()
        redirectCount = 0
        challengeRounds = 0
        serverCredential = nil
        proxyCredential = nil
        abortError = nil
        callerRange = nil
        rangeBase = 0
        lifecycle.enter(.waiting)
        return true
    }

    /// curl's failure as the `URLError` that says what happened. curl's codes are refined where the
    /// hop tells more than the code: before a complete head, an unsupported protocol (curl's word for
    /// an HTTP/0.9 reply or a garbage status line) is a bad server response, and running out of memory
    /// (its word for a header line past its 100 KB limit) an unparseable one; broken chunked framing is
    /// unparseable, not a lost connection (which callers retry). An exhausted descriptor table says so,
    /// and a certificate for another host (`TransportError.verificationFailure`). A message libcurl kept
    /// from a reused connection it replaced is not this failure's (`TransportError.currentMessage`).
    private func failure(_ code: CURLcode, easy: CurlEasyHandle) -> URLError {
        let message = TransportError.currentMessage(easy.errorMessage, for: code)
        let url = currentRequest.url
        if code == CURLE_PEER_FAILED_VERIFICATION {
            return TransportError.verificationFailure(message: message, verifyResult: easy.info(long: CURLINFO_SSL_VERIFYRESULT),
                                                      url: url)
        }
        let curlSays = message ?? String(cString: curl_easy_strerror(code))
        var refined: (code: URLError.Code, description: String)?
        if hop == .awaitingHead && code == CURLE_UNSUPPORTED_PROTOCOL {
            refined = (.badServerResponse, "The server's reply is not an HTTP response (\(curlSays)).")
        } else if hop == .awaitingHead && code == CURLE_OUT_OF_MEMORY {
            refined = (.cannotParseResponse, "A response header line is longer than libcurl accepts (100 KB).")
        } else if code == CURLE_RECV_ERROR, message?.lowercased().contains("chunked") == true {
            refined = (.cannotParseResponse, "The response's chunked framing is broken (\(curlSays)).")
        }
        let osError = socketOpenError != 0 ? socketOpenError : Int32(clamping: easy.info(long: CURLINFO_OS_ERRNO))
        if osError == EMFILE || osError == ENFILE {
            let name = osError == EMFILE ? "EMFILE" : "ENFILE"
            return TransportError.refined(
                refined?.code ?? TransportError.urlErrorCode(for: code),
                "\(refined?.description ?? curlSays) (\(name): the process has no file descriptors left)",
                curl: code, message: message, url: url, underlying: NSError(domain: NSPOSIXErrorDomain, code: Int(osError)))
        }
        guard let refined else { return TransportError.fromCurl(code, message: message, url: url) }
        return TransportError.refined(refined.code, refined.description, curl: code, message: message, url: url)
    }

    /// A body that ended before its `Content-Length` — one libcurl let pass because the number did
    /// not fit its integer (`Content-Length: 99999999999999999999999` and five bytes, then a close).
    private func bodyShortfall(_ easy: CurlEasyHandle) -> URLError? {
        // One look at the head (each optional-chained read copied it). The length parsed with the
        // head settles the usual case, a body that arrived whole, before the digits are read again.
        guard let head, head.statusCode != 204, head.statusCode != 304 else { return nil }
        let received = easy.info(offset: CURLINFO_SIZE_DOWNLOAD_T)
        guard head.expectedContentLength < 0 || received < head.expectedContentLength,
              let declared = head.declaredContentLength, received < declared,
              currentRequest.uppercasedMethod != "HEAD" else { return nil }
        return TransportError.make(.networkConnectionLost,
                                   "The server announced \(declared == .max ? "more than \(Int64.max)" : String(declared)) "
                                   + "body bytes and closed after \(received).", url: currentRequest.url)
    }

    /// A followable 3xx is complete: follow it, deliver it, or fail.
    private func redirectEnded() -> HopEndAction {
        switch redirectDecision() {
        case .follow(let request):
            if !Transfer.sameOrigin(currentRequest.url, request.url) { serverCredential = nil }
            currentRequest = request
            redirectCount += 1
            return .sendNextHop
        case .deliver:
            return .finish(deliverSetAside())
        case .fail(let error):
            return .finish(.failed(error))
        }
    }

    /// An answerable 401/407 is complete: the delegate decides (once per round) whether to send it
    /// again with a credential, deliver it, or cancel.
    private func challengeEnded() -> HopEndAction {
        guard let head else { return .finish(.completed) }
        let info = challengeInfo(head)
        let resolution: ChallengeResolution = challengeRounds >= Transfer.maxChallengeRounds || info.schemes == 0
            ? .deliver : (delegate?.transfer(self, didReceiveChallenge: info) ?? .deliver)
        switch resolution {
        case .answer(let user, let password):
            let credential = TransferCredential(user: user, password: password, schemes: info.schemes)
            if info.isProxy { proxyCredential = credential } else { serverCredential = credential }
            challengeRounds += 1
            return .sendNextHop
        case .deliver:
            return .finish(deliverSetAside())
        case .cancel:
            _ = deliverSetAsideResponse()
            return .finish(.completedWithError(TransportError.make(
                .userCancelledAuthentication, "The authentication challenge was cancelled.", url: currentRequest.url)))
        }
    }

    /// The set-aside response becomes the caller's: completed, or failed if the sink refused it.
    private func deliverSetAside() -> TransferOutcome {
        if let unfinished = unfinishedCompression() { return .failed(unfinished) }
        return deliverSetAsideResponse() ? .completed : .failed(abortError ?? TransportError.make(
            .cannotWriteToFile, "The output stream did not accept the response body.", url: currentRequest.url))
    }
}
