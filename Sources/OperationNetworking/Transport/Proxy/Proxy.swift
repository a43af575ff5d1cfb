import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which proxy an operation's requests go through (new, not in AFNetworking; the counterpart of
/// `URLSessionConfiguration.connectionProxyDictionary`). Set it on the manager, which copies it to every
/// operation it creates and archives it, or on one operation before it starts.
/// - Threading: an immutable value.
public enum ProxySetting: Equatable, Sendable {
    /// The process environment's proxies, by libcurl's rules: `http_proxy` (lower case only),
    /// `https_proxy` / `HTTPS_PROXY`, `all_proxy` / `ALL_PROXY`, and the hosts in `no_proxy` /
    /// `NO_PROXY` go direct. Read once when the operation starts (a variable set at run time is seen
    /// by the next operation), then kept for its redirects and retries. The default.
    case environment
    /// No proxy, whatever the environment says.
    case direct
    /// Every request through `url` — `http://host:port`, `https://host:port` (TLS to the proxy too),
    /// `socks5://host:port` or `socks5h://host:port` (the proxy resolves names) — except requests to
    /// the hosts in `bypass` (`no_proxy` syntax: a name matches itself and its subdomains; `*` is
    /// every host). https requests go through a `CONNECT` tunnel.
    ///
    /// Give the proxy's credential as `proxyCredential` (or store it in `URLCredentialStorage` for the
    /// proxy's protection space), never archived. A user and password written in `url`
    /// (`socks5://user:password@host`) are used in this process only: the manager's archive keeps the
    /// URL without them, and the setting's `description`, `debugDescription` and mirror (what
    /// `String(describing:)`, `print` and `dump` show) show the password as `***`.
    case proxy(URL, bypass: [String] = [])

    /// The proxy a request to `url` goes through, or `nil` for a direct connection; for
    /// `.environment`, read from `environment` by libcurl's rules.
    func proxyURL(for url: URL?, environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        guard let url, url.scheme != nil, let host = url.host?.lowercased() else { return nil }
        switch self {
        case .direct:
            return nil
        case .proxy(let proxy, let bypass):
            return ProxySetting.bypasses(host, bypass) ? nil : proxy
        case .environment:
            return ProxyEnvironment(environment)?.proxyURL(for: url)
        }
    }

    /// Whether `host` is one of `patterns` (`no_proxy` syntax).
    static func bypasses(_ host: String, _ patterns: [String]) -> Bool {
        patterns.contains { pattern in
            let pattern = pattern.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
            guard !pattern.isEmpty else { return false }
            return pattern == "*" || host == pattern || host.hasSuffix("." + pattern)
        }
    }
}

/// The proxy variables of the process environment, read in one pass over it (`ProxySetting.environment`).
/// The transport hands them to libcurl as explicit options, so that libcurl does not look them up
/// again for every request. An empty variable counts as set, as libcurl counts it: `http_proxy=""`
/// means no proxy, not `all_proxy`. A class, made only when a variable is set: a transfer holds a
/// reference, `nil` for the usual environment without any.
/// - Threading: immutable after init; any thread.
final class ProxyEnvironment: Sendable {
    /// `http_proxy` (never `HTTP_PROXY`, as libcurl: a CGI sets that from a request header).
    let http: String?
    /// `https_proxy`, else `HTTPS_PROXY`.
    let https: String?
    /// `all_proxy`, else `ALL_PROXY`.
    let all: String?
    /// `no_proxy`, else `NO_PROXY`.
    let noProxy: String?

    init(http: String?, https: String?, all: String?, noProxy: String?) {
        self.http = http
        self.https = https
        self.all = all
        self.noProxy = noProxy
    }

    /// The variables as the process environment holds them now; `nil` when none is set.
    static func current() -> ProxyEnvironment? {
        var http: String?, https: String?, all: String?, noProxy: String?
        var httpsUpper: String?, allUpper: String?, noProxyUpper: String?
        var entry = environ
        while let pointer = entry.pointee {
            defer { entry += 1 }
            // Most variables are ruled out by their first byte, before any comparison.
            switch UInt8(bitPattern: pointer[0]) {
            case 0x68: // h
                read(pointer, "http_proxy=", into: &http)
                read(pointer, "https_proxy=", into: &https)
            case 0x48: read(pointer, "HTTPS_PROXY=", into: &httpsUpper)   // H
            case 0x61: read(pointer, "all_proxy=", into: &all)             // a
            case 0x41: read(pointer, "ALL_PROXY=", into: &allUpper)        // A
            case 0x6E: read(pointer, "no_proxy=", into: &noProxy)          // n
            case 0x4E: read(pointer, "NO_PROXY=", into: &noProxyUpper)     // N
            default: continue
            }
        }
        return chosen(http: http, https: https, httpsUpper: httpsUpper, all: all, allUpper: allUpper,
                      noProxy: noProxy, noProxyUpper: noProxyUpper)
    }

    /// The variables `environment` holds (`ProxySetting.proxyURL(for:environment:)`); `nil` when none is set.
    convenience init?(_ environment: [String: String]) {
        guard let chosen = ProxyEnvironment.chosen(
            http: environment["http_proxy"], https: environment["https_proxy"], httpsUpper: environment["HTTPS_PROXY"],
            all: environment["all_proxy"], allUpper: environment["ALL_PROXY"],
            noProxy: environment["no_proxy"], noProxyUpper: environment["NO_PROXY"]) else { return nil }
        self.init(http: chosen.http, https: chosen.https, all: chosen.all, noProxy: chosen.noProxy)
    }

    /// libcurl's precedence between the spellings, in one place: the lower case wins; `nil` when none is set.
    private static func chosen(http: String?, https: String?, httpsUpper: String?, all: String?, allUpper: String?,
                               noProxy: String?, noProxyUpper: String?) -> ProxyEnvironment? {
        guard http != nil || https != nil || httpsUpper != nil || all != nil || allUpper != nil
                || noProxy != nil || noProxyUpper != nil else { return nil }
        return ProxyEnvironment(http: http, https: https ?? httpsUpper, all: all ?? allUpper,
                                noProxy: noProxy ?? noProxyUpper)
    }

    /// The proxy a request to `url` goes through by these variables, or `nil` for a direct connection:
    /// `no_proxy` first (a name matches itself and its subdomains; `*` is every host), then the
    /// variable for its scheme, else `all_proxy`; an empty one means none.
    func proxyURL(for url: URL) -> URL? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        let bypass = (noProxy ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !ProxySetting.bypasses(host, bypass) else { return nil }
        let text = proxy(https: scheme == "https")
        guard !text.isEmpty else { return nil }
        return URL(string: text.contains("://") ? text : "http://\(text)")
    }

    /// The proxy libcurl is given for a request over https or plain http: `""` for none.
    func proxy(https isHTTPS: Bool) -> String {
        (isHTTPS ? https : http) ?? all ?? ""
    }

    /// Sets `value` to what follows `prefix` (a name and `=`) in `entry`, the first time it matches
    /// (`getenv` answers with the first too).
    private static func read(_ entry: UnsafeMutablePointer<CChar>, _ prefix: StaticString, into value: inout String?) {
        guard value == nil else { return }
        // The entry ends in NUL, which no byte of the prefix is: a shorter entry stops at a mismatch.
        let name = prefix.utf8Start
        for index in 0..<prefix.utf8CodeUnitCount where UInt8(bitPattern: entry[index]) != name[index] { return }
        value = String(cString: entry + prefix.utf8CodeUnitCount)
    }
}

extension ProxySetting: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `environment`, `direct`, or `proxy(URL, bypass: […])` with a password in the URL as `***`.
    public var description: String {
        switch self {
        case .environment: return "environment"
        case .direct: return "direct"
        case .proxy(let url, let bypass): return "proxy(\(URLRedaction.redactingPassword(of: url)), bypass: \(bypass))"
        }
    }

    /// `description`, prefixed with the type's name: never the password.
    public var debugDescription: String { "ProxySetting.\(description)" }

    /// What `dump` shows: the case, the URL with its password as `***`, and the bypass list.
    public var customMirror: Mirror {
        switch self {
        case .environment, .direct:
            return Mirror(self, children: [], displayStyle: .enum)
        case .proxy(let url, let bypass):
            return Mirror(self, children: ["url": URLRedaction.redactingPassword(of: url), "bypass": bypass],
                          displayStyle: .enum)
        }
    }
}

extension ProxySetting {
    /// The archived form: `nil` for `.environment`, `""` for `.direct`, else the URL without its user and
    /// password (they are never archived) and the bypass list. (A URL they cannot be taken out of is not
    /// archived at all, rather than archived with them.)
    var archived: (url: String, bypass: [String])? {
        switch self {
        case .environment: return nil
        case .direct: return ("", [])
        case .proxy(let url, let bypass):
            return URLRedaction.removingUserInfo(from: url).map { ($0.absoluteString, bypass) }
        }
    }

    /// The setting an archive describes (`.environment` when it names none or a URL that does not parse).
    init(archivedURL: String?, bypass: [String]) {
        guard let archivedURL else {
            self = .environment
            return
        }
        if archivedURL.isEmpty {
            self = .direct
        } else if let url = URL(string: archivedURL), ProxySetting.supportedSchemes.contains(url.scheme?.lowercased() ?? "") {
            self = .proxy(url, bypass: bypass)
        } else {
            self = .environment
        }
    }

    /// The proxy URL schemes libcurl is asked to speak.
    static let supportedSchemes: Set<String> = ["http", "https", "socks5", "socks5h"]
}

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
        // A request over a Unix domain socket goes to no proxy (nor does curl's `--unix-socket`).
        if UnixSocketRoute.isUnixURL(url) || settings.unixSocketPath?.isEmpty == false { return nil }
        guard case .environment = settings.proxy else { return settings.proxy.proxyURL(for: url) }
        return url.flatMap { settings.proxyEnvironment?.proxyURL(for: $0) }
    }

    /// Applies the operation's proxy setting to the hop being configured. libcurl is always told what
    /// to do, so that it never reads the environment itself (five `getenv`s a request): a hop with no
    /// proxy gets `CURLOPT_NOPROXY` `*` (every host direct: libcurl then looks for no proxy at all,
    /// `--noproxy '*'` in curl's tool); one through a proxy gets the proxy and the hosts that bypass
    /// it. For `.environment` they are the variables read when the transfer was made, chosen for the
    /// hop's scheme by libcurl's rules. A hop over a Unix domain socket goes to no proxy.
    func configureProxy(_ easy: CurlEasyHandle) throws {
        guard hop.socket == nil else {
            try easy.set(CURLOPT_NOPROXY, "*")
            return
        }
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
