import CCurl
import CCurlShim
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
        conditionalFields = []
        // Those a redirect kept are on the request itself.
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

// MARK: - Network thread: redirects, decided by the library hop by hop

extension Transfer {
    /// What to do with a redirect response that just completed.
    enum RedirectDecision {
        /// Follow with this request (the delegate may have changed it).
        case follow(URLRequest)
        /// Stop and hand the 3xx to the caller as the response.
        case deliver
        /// Fail the transfer.
        case fail(Error)
    }

    /// Applies the redirect rules (hop limit, method and body by status, credentials kept to one origin),
    /// then lets the delegate's redirect block decide.
    func redirectDecision() -> RedirectDecision {
        guard let head, let currentURL = currentRequest.url,
              let location = hop.headerParser.value(for: "Location"),
              let target = URL(string: location, relativeTo: currentURL)?.absoluteURL else {
            return .deliver   // a Location nobody can follow: the 3xx is the answer
        }
        guard current.redirectCount < Transfer.maxRedirects else {
            return .fail(TransportError.make(.httpTooManyRedirects,
                                             "More than \(Transfer.maxRedirects) redirects.", url: currentURL))
        }
        if let socket = hop.socket {
            guard stays(on: socket, to: target) else { return .deliver }
        } else {
            // Never onto a Unix domain socket: an `http+unix` URL is as unsupported here as `file:`.
            guard let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
                return .fail(TransportError.make(.unsupportedURL, "Redirect to an unsupported URL: \(location)",
                                                 url: currentURL))
            }
        }
        // The body is looked after once the block decided (`withFreshBody`): it may drop it or set its own.
        guard var chosen = Transfer.redirectedRequest(from: currentRequest, to: target, status: head.statusCode,
                                                     bodyIsReplayable: true) else { return .deliver }
        if let delegate, let response = head.makeResponse() {
            guard let decided = delegate.transfer(self, willRedirectTo: chosen, response: response) else { return .deliver }
            chosen = decided
        }
        guard let sent = withFreshBody(chosen) else { return .fail(bodyStreamExhausted(head.statusCode)) }
        return .follow(sent)
    }

    /// Whether a redirect from a hop over `socket` to `target` is followed: only over the same socket,
    /// to an http or https URL of the host the hop named (or an `http+unix` URL of the same socket,
    /// which a relative `Location` of one makes). Anywhere else the 3xx is the response: a service on a
    /// local socket does not send its caller to another host, over the socket or over TCP, unasked.
    func stays(on socket: UnixSocketRoute, to target: URL) -> Bool {
        guard let next = try? UnixSocketRoute.route(for: target, configured: settings.unixSocketPath),
              next.socketPath == socket.socketPath,
              let scheme = next.url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return UnixSocketRoute.isUnixURL(target)
            || next.url.host(percentEncoded: true)?.lowercased() == socket.url.host(percentEncoded: true)?.lowercased()
    }

    /// The request for the next hop: method and body by status code, credentials kept to their origin
    /// (`Authorization`, `Proxy-Authorization` and `Cookie` set on the request are dropped for another one).
    /// `nil` when a 307/308 would have to resend a body stream that cannot be replayed.
    static func redirectedRequest(from request: URLRequest, to target: URL, status: Int,
                                  bodyIsReplayable: Bool) -> URLRequest? {
        var next = request
        next.url = target
        let method = request.uppercasedMethod
        let becomesGET = (status == 303 && method != "HEAD" && method != "GET")
            || ((status == 301 || status == 302) && method == "POST")
        if becomesGET {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.httpBodyStream = nil
            next.setValue(nil, forHTTPHeaderField: "Content-Type")
            next.setValue(nil, forHTTPHeaderField: "Content-Length")
        } else if request.httpBodyStream != nil && !bodyIsReplayable {
            return nil
        }
        if !sameOrigin(request.url, target) {
            // A header the app wrote is sent to whoever the next hop reaches: reached directly, another
            // origin would read the proxy's login too. The library's own proxy login (`proxyCredential`)
            // is not a header here and still reaches the proxy.
            next.setValue(nil, forHTTPHeaderField: "Authorization")
            next.setValue(nil, forHTTPHeaderField: "Proxy-Authorization")
            next.setValue(nil, forHTTPHeaderField: "Cookie")
        }
        return next
    }

    /// Scheme, host and port equal (default ports filled in).
    static func sameOrigin(_ a: URL?, _ b: URL?) -> Bool {
        guard let a, let b else { return false }
        func port(_ url: URL) -> Int { url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80) }
        return a.scheme?.lowercased() == b.scheme?.lowercased()
            && a.host?.lowercased() == b.host?.lowercased() && port(a) == port(b)
    }

    /// The redirect is not followed (or the challenge not answered): its head and body become the response.
    func deliverSetAsideResponse() -> Bool {
        guard let head else { return true }
        hop.classify(as: .delivering)
        // The body is complete and held: restarting changes nothing, it replaces what memory held anyway.
        if case .fail(let error) = delegate?.transfer(self, willDeliver: head) ?? .allow {
            refuseResponse(with: error)
            return false
        }
        let setAside = hop.setAsideBody
        hop.setAsideBody = Data()
        if let outputStream {
            guard setAside.withUnsafeBytes({ write($0, to: outputStream) }) else { return false }
        } else {
            current.body = setAside
        }
        current.bytesReceived = Int64(setAside.count)
        current.expectedBodyLength = head.expectedContentLength
        return true
    }
}

/// curl's `CURLAUTH_*` bits (C macros with casts, which Swift does not import).
enum CurlAuth {
    static let basic = 1 << 0
    static let digest = 1 << 1
    static let ntlm = 1 << 3
}

/// A 401/407 challenge the server sent, as the network thread saw it.
struct AuthenticationChallengeInfo {
    /// `true` for 407 (`Proxy-Authenticate`), `false` for 401 (`WWW-Authenticate`).
    let isProxy: Bool
    /// curl's `CURLAUTH_*` bits for the schemes the server offered that curl can answer.
    let schemes: Int
    /// The realm of the first challenge, if any.
    let realm: String?
    /// `NSURLAuthenticationMethodHTTPDigest`, `…HTTPBasic`, `…NTLM` or `…Default`.
    let method: String
    /// Rounds already answered with a credential (0 for the first challenge).
    let previousFailureCount: Int
    /// The challenge response head.
    let head: ResponseHead
    /// For a 407, the proxy that sent it (its protection space is the proxy's, not the server's).
    var proxyURL: URL? = nil
}

/// What the operation decided about a challenge.
enum ChallengeResolution {
    /// Send the request again with this user and password.
    case answer(user: String, password: String)
    /// Stop and deliver the 401/407 as the response.
    case deliver
    /// Stop, deliver the 401/407, and fail with `URLError(.userCancelledAuthentication)`.
    case cancel
}

/// A user and password the transfer answers challenges with (for one origin, or the proxy).
struct TransferCredential {
    var user: String
    var password: String
    var schemes: Int
}

// MARK: - Network thread

extension Transfer {
    /// At most this many challenge rounds; then the 401/407 is delivered.
    static let maxChallengeRounds = 4

    /// Whether the response head just completed is a challenge the library may answer.
    func isAnswerableChallenge(_ head: ResponseHead) -> Bool {
        // A body stream does not stop it: the body is made again, or asked for, once answered (`withFreshBody`).
        guard head.statusCode == 401 || head.statusCode == 407 else { return false }
        return !head.values(for: head.statusCode == 401 ? "WWW-Authenticate" : "Proxy-Authenticate").isEmpty
    }

    /// Reads the challenge out of the head.
    func challengeInfo(_ head: ResponseHead) -> AuthenticationChallengeInfo {
        let isProxy = head.statusCode == 407
        let values = head.values(for: isProxy ? "Proxy-Authenticate" : "WWW-Authenticate")
        var schemes = 0
        for value in values {
            let lowered = value.lowercased()
            for (name, bit) in [("basic", CurlAuth.basic), ("digest", CurlAuth.digest), ("ntlm", CurlAuth.ntlm)]
            where lowered.hasPrefix(name) || lowered.contains(", \(name)") || lowered.contains(",\(name)") {
                schemes |= bit
            }
        }
        let method: String
        if schemes & CurlAuth.ntlm != 0 {
            method = NSURLAuthenticationMethodNTLM
        } else if schemes & CurlAuth.digest != 0 {
            method = NSURLAuthenticationMethodHTTPDigest
        } else if schemes & CurlAuth.basic != 0 {
            method = NSURLAuthenticationMethodHTTPBasic
        } else {
            method = NSURLAuthenticationMethodDefault
        }
        return AuthenticationChallengeInfo(isProxy: isProxy, schemes: schemes, realm: Transfer.realm(in: values),
                                           method: method, previousFailureCount: current.challengeRounds, head: head,
                                           proxyURL: isProxy ? proxyURL(for: currentRequest.url) : nil)
    }

    /// Applies the credentials of earlier challenge rounds to the hop being configured.
    func configureCredentials(_ easy: CurlEasyHandle) throws {
        if let credential = current.serverCredential {
            try easy.set(CURLOPT_USERNAME, credential.user)
            try easy.set(CURLOPT_PASSWORD, credential.password)
            try easy.set(CURLOPT_HTTPAUTH, credential.schemes)
        }
        if let credential = current.proxyCredential {
            try easy.set(CURLOPT_PROXYUSERNAME, credential.user)
            try easy.set(CURLOPT_PROXYPASSWORD, credential.password)
            try easy.set(CURLOPT_PROXYAUTH, credential.schemes)
        }
    }

    /// `realm="…"` of the first challenge that has one.
    private static func realm(in values: [String]) -> String? {
        for value in values {
            guard let start = value.range(of: "realm=\"", options: .caseInsensitive) else { continue }
            let rest = value[start.upperBound...]
            if let end = rest.firstIndex(of: "\"") { return String(rest[..<end]) }
        }
        return nil
    }
}

// MARK: - Network thread: when the retry policy sends the request again

extension Transfer {
    /// Whether another attempt may be made at all: attempts left, a method the policy allows, a body
    /// that can be sent again, no bytes given to a caller's stream, not a resumed download.
    var mayRetry: Bool {
        guard attempt < settings.retryPolicy.maxAttempts, resumeFrom == nil,
              settings.retryPolicy.retryableMethods.contains(originalRequest.uppercasedMethod) else { return false }
        if outputStream != nil && bytesReceived > 0 { return false }
        guard let stream = originalRequest.httpBodyStream else { return true }
        return (stream as? MultipartBodyStream)?.canBeRebuilt ?? false   // a caller's own stream: never
    }

    /// A failed attempt: retried when its error is one the policy names, else the transfer ends.
    func retryOrFinish(_ outcome: TransferOutcome) -> HopEndAction {
        guard case .failed(let error) = outcome, mayRetry, let code = (error as? URLError)?.code,
              settings.retryPolicy.retryableErrorCodes.contains(code) else { return .finish(outcome) }
        return .retry(after: settings.retryPolicy.backoff(after: attempt), error: error)
    }

    /// The delay before retrying a retryable status, or `nil` to deliver it: no attempts left, or a
    /// `Retry-After` beyond the policy's `maxDelay`.
    func retryDelayForStatus() -> TimeInterval? {
        guard mayRetry else { return nil }
        if settings.retryPolicy.respectsRetryAfter, let header = head?.value(for: "Retry-After"),
           let requested = RetryPolicy.retryAfter(header) {
            return requested <= settings.retryPolicy.maxDelay ? requested : nil
        }
        return settings.retryPolicy.backoff(after: attempt)
    }

    /// Whether a final response with `status` is one the policy may retry (its body is then set aside).
    func isRetryableStatus(_ status: Int) -> Bool {
        settings.retryPolicy.retryableStatusCodes.contains(status) && mayRetry
    }
}
