import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Gives a transfer the user and password it logs into a SOCKS5 proxy with before connecting: a
/// SOCKS5 proxy sends no challenge to answer. The operation (the transfer's delegate) conforms.
/// - Threading: called on the network thread.
protocol ProxyLoginSource: AnyObject {
    /// The login for `proxy` (a `socks5` or `socks5h` URL), or `nil` to send none of the library's
    /// (libcurl then uses the user and password written in the URL, if any).
    func transfer(_ transfer: Transfer, loginFor proxy: URL) -> TransferCredential?
}

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

    /// The proxy a request to `url` goes through, or `nil` for a direct connection: for `.environment`,
    /// by the variables read when the transfer was made (the ones libcurl was handed), not as the
    /// environment says now.
    func proxyURL(for url: URL?) -> URL? {
        guard case .environment = settings.proxy else { return settings.proxy.proxyURL(for: url) }
        return url.flatMap { settings.proxyEnvironment?.proxyURL(for: $0) }
    }

    /// Applies the operation's proxy setting to the hop being configured. libcurl is always told what
    /// to do, so that it never reads the environment itself (five `getenv`s a request): a hop with no
    /// proxy gets `CURLOPT_NOPROXY` `*` (every host direct: libcurl then looks for no proxy at all,
    /// `--noproxy '*'` in curl's tool); one through a proxy gets the proxy and the hosts that bypass
    /// it. For `.environment` they are the variables read when the transfer was made, chosen for the
    /// hop's scheme by libcurl's rules.
    func configureProxy(_ easy: CurlEasyHandle) throws {
        switch settings.proxy {
        case .environment:
            if let environment = settings.proxyEnvironment,
               case let proxy = environment.proxy(https: hop.tlsOrigin != nil), !proxy.isEmpty {
                try easy.set(CURLOPT_PROXY, proxy)
                try easy.set(CURLOPT_NOPROXY, environment.noProxy ?? "")
            } else {
                try easy.set(CURLOPT_NOPROXY, "*")
            }
        case .direct:
            try easy.set(CURLOPT_NOPROXY, "*")
        case .proxy(let url, let bypass):
            guard ProxySetting.supportedSchemes.contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw TransportError.make(.unsupportedURL, "The proxy \(url.absoluteString) is not an http, https or "
                                          + "socks5 URL with a host.", url: currentRequest.url)
            }
            try easy.set(CURLOPT_PROXY, url.absoluteString)
            // Also replaces the environment's no_proxy for this transfer.
            try easy.set(CURLOPT_NOPROXY, bypass.joined(separator: ","))
            try configureSOCKSLogin(easy, proxy: url)
        }
    }

    /// Logs into a SOCKS5 proxy up front (user/password, RFC 1929) with the login the operation finds,
    /// when this hop goes through one.
    private func configureSOCKSLogin(_ easy: CurlEasyHandle, proxy url: URL) throws {
        guard Transfer.isSOCKS(url), proxyURL(for: currentRequest.url) != nil,
              let login = (delegate as? ProxyLoginSource)?.transfer(self, loginFor: url) else { return }
        try easy.set(CURLOPT_PROXYUSERNAME, login.user)
        try easy.set(CURLOPT_PROXYPASSWORD, login.password)
    }

    /// Whether `url` names a SOCKS5 proxy.
    static func isSOCKS(_ url: URL) -> Bool {
        let scheme = url.scheme?.lowercased()
        return scheme == "socks5" || scheme == "socks5h"
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
        case 200..<300: hop.tunnelAnswer = nil
        case 407: hop.tunnelAnswer = .challenge(head)
        default: hop.tunnelAnswer = .refused(status: head.statusCode)
        }
    }

    /// The hop failed with `code` after the proxy refused the tunnel or the login: answer an HTTP
    /// proxy's 407 with a credential the operation finds (then the hop goes again), or fail with an
    /// error that says what happened — never the lost connection or refused connection curl reports,
    /// which retry policies would send again. `nil` when the proxy refused nothing.
    func proxyRefusalEnded(code: CURLcode, easy: CurlEasyHandle) -> HopEndAction? {
        if code == CURLE_PROXY, let refusal = socksLoginRefusal(easy) { return .finish(.failed(refusal)) }
        return tunnelEnded()
    }

    /// `URLError(.userAuthenticationRequired)` when a SOCKS5 proxy refused the login (the user and
    /// password, or the lack of them), as an HTTP proxy's last 407 to `CONNECT` fails; `nil` for its
    /// other refusals (a target it cannot reach stays a connection failure).
    private func socksLoginRefusal(_ easy: CurlEasyHandle) -> URLError? {
        let why: String
        switch CURLproxycode(rawValue: UInt32(truncatingIfNeeded: easy.info(long: CURLINFO_PROXY_ERROR))) {
        case CURLPX_USER_REJECTED: why = "refused the user name and password"
        case CURLPX_NO_AUTH: why = "accepts none of the login methods offered (it wants a user name and password)"
        case CURLPX_LONG_USER, CURLPX_LONG_PASSWD: why = "cannot be sent a user name or password over 255 bytes"
        default: return nil
        }
        let url = currentRequest.url
        let proxyName = proxyURL(for: url).map { "\($0.host ?? "?"):\($0.port.map(String.init) ?? "1080")" }
            ?? "the proxy"
        return TransportError.refined(.userAuthenticationRequired, "The SOCKS5 proxy \(proxyName) \(why).",
                                      curl: CURLE_PROXY, message: easy.errorMessage, url: url)
    }

    /// What `proxyRefusalEnded` does for an HTTP proxy that refused the tunnel.
    private func tunnelEnded() -> HopEndAction? {
        guard let answer = hop.tunnelAnswer else { return nil }
        let url = currentRequest.url
        let target = url.map { "\($0.host ?? "?"):\($0.port ?? 443)" } ?? "the server"
        let proxyName = proxyURL(for: url).map { "\($0.host ?? "?"):\($0.port.map(String.init) ?? "default port")" }
            ?? "the proxy"
        switch answer {
        case .refused(let status):
            return .finish(.failed(TransportError.make(
                .cannotConnectToHost, "The proxy \(proxyName) refused the tunnel to \(target) (HTTP \(status) to CONNECT).",
                url: url)))
        case .challenge(let head):
            let info = challengeInfo(head)
            let resolution: ChallengeResolution = current.challengeRounds >= Transfer.maxChallengeRounds || info.schemes == 0
                ? .deliver : (delegate?.transfer(self, didReceiveChallenge: info) ?? .deliver)
            if case .answer(let user, let password) = resolution {
                current.proxyCredential = TransferCredential(user: user, password: password, schemes: info.schemes)
                current.challengeRounds += 1
                return .sendNextHop
            }
            let why = current.challengeRounds == 0 ? "no credential answered it" : "the credential was refused"
            return .finish(.failed(TransportError.make(
                .userAuthenticationRequired,
                "The proxy \(proxyName) requires authentication for the tunnel to \(target) (407 to CONNECT); \(why).",
                url: url)))
        }
    }
}
