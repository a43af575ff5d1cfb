import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: proxies, and the CONNECT tunnel of an https request

extension Transfer {
    /// What the proxy answered to the `CONNECT` of an https request, when it was not "200 Connection
    /// established".
    enum TunnelAnswer {
        /// 407: the proxy wants credentials.
        case challenge(ResponseHead)
        /// Any other refusal (403, 502, …).
        case refused(status: Int)
    }

    /// Applies the operation's proxy setting to the hop being configured. `.environment` leaves libcurl
    /// reading the environment at each new connection when `environmentNamesProxy`; otherwise the hop goes
    /// direct, with the no-proxy list set too, so that libcurl skips its five `getenv` calls.
    func configureProxy(_ easy: CurlEasyHandle, environmentNamesProxy: Bool) throws {
        switch proxy {
        case .environment:
            guard !environmentNamesProxy else { return }
            try easy.set(CURLOPT_PROXY, "")
            try easy.set(CURLOPT_NOPROXY, "")
        case .direct:
            try easy.set(CURLOPT_PROXY, "")
        case .proxy(let url, let bypass):
            guard ProxySetting.supportedSchemes.contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw TransportError.make(.unsupportedURL, "The proxy \(url.absoluteString) is not an http, https or "
                                          + "socks5 URL with a host.", url: currentRequest.url)
            }
            try easy.set(CURLOPT_PROXY, url.absoluteString)
            // Also replaces the environment's no_proxy for this transfer.
            try easy.set(CURLOPT_NOPROXY, bypass.joined(separator: ","))
        }
    }

    /// Whether the process environment names a proxy libcurl would read for a request (`http_proxy`,
    /// `https_proxy`, `HTTPS_PROXY`, `all_proxy`, `ALL_PROXY`, set at all, even empty). One pass over the
    /// environment, read when a hop is configured, so a variable set at run time is seen by the next
    /// request, as libcurl's own reading would see it; it costs a fifth of libcurl's five lookups.
    static func environmentNamesProxy() -> Bool {
        // `environ` is NULL after clearenv(3): typed as an optional, it is never force-unwrapped.
        let environment: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard var entry = environment else { return false }
        while let variable = entry.pointee {
            switch UInt8(bitPattern: variable.pointee) {
            case UInt8(ascii: "h"):
                if strncmp(variable, "http_proxy=", 11) == 0 || strncmp(variable, "https_proxy=", 12) == 0 { return true }
            case UInt8(ascii: "H"):
                if strncmp(variable, "HTTPS_PROXY=", 12) == 0 { return true }
            case UInt8(ascii: "a"):
                if strncmp(variable, "all_proxy=", 10) == 0 { return true }
            case UInt8(ascii: "A"):
                if strncmp(variable, "ALL_PROXY=", 10) == 0 { return true }
            default:
                break
            }
            entry += 1
        }
        return false
    }

    /// Whether a header block that just completed is the proxy's answer to `CONNECT`, not the server's:
    /// on an https request over a connection this transfer opened, every block before TLS to the server
    /// is up comes from the proxy. (A reused connection reports no TLS time at all, and its blocks are
    /// the server's.)
    func isTunnelAnswer() -> Bool {
        guard tlsOrigin != nil, let easy, easy.info(offset: CURLINFO_APPCONNECT_TIME_T) == 0 else { return false }
        return easy.info(long: CURLINFO_NUM_CONNECTS) > 0
    }

    /// Keeps what the proxy answered to `CONNECT` (it is never the response): nothing for a 2xx.
    func receiveTunnelAnswer(_ head: ResponseHead) {
        switch head.statusCode {
        case 200..<300: tunnelAnswer = nil
        case 407: tunnelAnswer = .challenge(head)
        default: tunnelAnswer = .refused(status: head.statusCode)
        }
    }

    /// The hop failed after the proxy refused the tunnel: answer its 407 with a credential the
    /// operation finds (then the hop goes again), or fail with an error that says what happened —
    /// never the lost connection curl reports, which retry policies would send again.
    func tunnelEnded() -> HopEndAction? {
        guard let answer = tunnelAnswer else { return nil }
        let url = currentRequest.url
        let target = url.map { "\($0.host ?? "?"):\($0.port ?? 443)" } ?? "the server"
        let proxyName = proxy.proxyURL(for: url).map { "\($0.host ?? "?"):\($0.port.map(String.init) ?? "default port")" }
            ?? "the proxy"
        switch answer {
        case .refused(let status):
            return .finish(.failed(TransportError.make(
                .cannotConnectToHost, "The proxy \(proxyName) refused the tunnel to \(target) (HTTP \(status) to CONNECT).",
                url: url)))
        case .challenge(let head):
            let info = challengeInfo(head)
            let resolution: ChallengeResolution = challengeRounds >= Transfer.maxChallengeRounds || info.schemes == 0
                ? .deliver : (delegate?.transfer(self, didReceiveChallenge: info) ?? .deliver)
            if case .answer(let user, let password) = resolution {
                proxyCredential = TransferCredential(user: user, password: password, schemes: info.schemes)
                challengeRounds += 1
                return .sendNextHop
            }
            let why = challengeRounds == 0 ? "no credential answered it" : "the credential was refused"
            return .finish(.failed(TransportError.make(
                .userAuthenticationRequired,
                "The proxy \(proxyName) requires authentication for the tunnel to \(target) (407 to CONNECT); \(why).",
                url: url)))
        }
    }
}
