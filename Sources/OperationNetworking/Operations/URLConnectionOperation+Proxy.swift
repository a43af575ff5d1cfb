import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLConnectionOperation {
    /// The proxy the request goes through (see `ProxySetting`). Default `.environment`; the manager
    /// sets its own. Set it before the operation starts. `copy()` keeps it; not archived with the
    /// operation.
    public var proxy: ProxySetting {
        get { self[setting: \.proxy] }
        set { self[setting: \.proxy] = newValue }
    }

    /// The credential for the proxy. Default `nil`. Never archived, never shown by a description.
    ///
    /// - An HTTP or HTTPS proxy: it answers the proxy's 407 (for an https request, the 407 to the
    ///   tunnel's `CONNECT`), before `credential` and `URLCredentialStorage.shared`'s credential for the
    ///   proxy's protection space.
    /// - A SOCKS5 proxy set with `ProxySetting.proxy` (`socks5://` or `socks5h://`): it is sent up front,
    ///   as RFC 1929's user name and password (a SOCKS5 proxy sends no challenge). Without it, the user
    ///   and password written in the proxy's URL are sent; without either, with
    ///   `shouldUseCredentialStorage`, the default credential `URLCredentialStorage.shared` holds for a
    ///   proxy protection space of the proxy's host and port whose type is
    ///   `NSURLProtectionSpaceSOCKSProxy` (or the URL's scheme). A login the proxy refuses fails the
    ///   operation with `URLError(.userAuthenticationRequired)` after one attempt, whatever the retry
    ///   policy, as an HTTP proxy's last 407 does. (With `.environment`, libcurl logs into a SOCKS5
    ///   proxy with the user and password of the variable's URL.)
    public var proxyCredential: URLCredential? {
        get { self[setting: \.proxyCredential] }
        set { self[setting: \.proxyCredential] = newValue }
    }
}

// MARK: - Network thread: the login to a SOCKS5 proxy

extension URLConnectionOperation: ProxyLoginSource {
    func transfer(_ transfer: Transfer, loginFor proxy: URL) -> TransferCredential? {
        let (credential, useStorage) = state.withLock {
            ($0.configuration.proxyCredential, $0.configuration.shouldUseCredentialStorage)
        }
        if let credential, let user = credential.user {
            return TransferCredential(user: user, password: credential.password ?? "", schemes: 0)
        }
        // libcurl sends the user and password written in the URL itself.
        guard proxy.user == nil, useStorage, let host = proxy.host,
              let stored = URLConnectionOperation.storedSOCKSCredential(host: host, port: proxy.port ?? 1080,
                                                                        scheme: proxy.scheme ?? ""),
              let user = stored.user else { return nil }
        return TransferCredential(user: user, password: stored.password ?? "", schemes: 0)
    }

    /// The default credential `URLCredentialStorage.shared` holds for the SOCKS proxy at `host`:`port`
    /// (any realm and method: a SOCKS5 proxy names neither). Found by comparing fields, as for an
    /// HTTP proxy's 407.
    static func storedSOCKSCredential(host: String, port: Int, scheme: String) -> URLCredential? {
        let types: Set<String> = [NSURLProtectionSpaceSOCKSProxy.lowercased(), scheme.lowercased()]
        let storage = URLCredentialStorage.shared
        for (space, credentials) in storage.allCredentials
        where space.isProxy() && space.host.lowercased() == host.lowercased() && space.port == port
            && types.contains(space.proxyType?.lowercased() ?? "") {
            return storage.defaultCredential(for: space) ?? (credentials.count == 1 ? credentials.values.first : nil)
        }
        return nil
    }
}

// MARK: - curlDescription: the proxy

extension CurlCommand {
    /// The options that send the command through the operation's proxy as the transport does
    /// (Proxy.swift), in the spelling of curl's tool: nothing for `.environment` (curl reads
    /// the same variables libcurl does), `--noproxy '*'` for `.direct`; for `.proxy`, `--proxy URL` for an
    /// HTTP or HTTPS proxy, `--socks5 host:port` or `--socks5-hostname host:port` for a SOCKS5 one,
    /// `--noproxy` with the bypass list, and `--proxy-user` with the login (the proxy credential, or
    /// the user and password written in the URL; the password as `***` when redacting), with
    /// `--proxy-anyauth` for the proxy credential of an HTTP proxy, which the library sends in answer to
    /// the scheme the proxy's 407 offers. The credential storage is not read.
    var proxyArguments: [String] {
        switch proxy {
        case .environment:
            return []
        case .direct:
            return ["--noproxy '*'"]
        case .proxy(let url, let bypass):
            guard let bare = URLRedaction.removingUserInfo(from: url), let host = bare.host else {
                let shown = redactingSecrets ? URLRedaction.redactingPassword(of: url) : url.absoluteString
                return ["--proxy \(CurlCommand.quote(shown))"]
            }
            var arguments: [String]
            switch bare.scheme?.lowercased() {
            case "socks5", "socks5h":
                let option = bare.scheme?.lowercased() == "socks5h" ? "--socks5-hostname" : "--socks5"
                let name = host.contains(":") ? "[\(host)]" : host
                arguments = ["\(option) \(CurlCommand.quote("\(name):\(bare.port ?? 1080)"))"]
            default:
                arguments = ["--proxy \(CurlCommand.quote(bare.absoluteString))"]
            }
            if !bypass.isEmpty { arguments.append("--noproxy \(CurlCommand.quote(bypass.joined(separator: ",")))") }
            if let login = proxyLogin(url) {
                let password = redactingSecrets ? CurlCommand.redacted : login.password
                let anyAuth = login.answersChallenges && !Transfer.isSOCKS(url) ? "--proxy-anyauth " : ""
                arguments.append("\(anyAuth)--proxy-user \(CurlCommand.quote("\(login.user):\(password)"))")
            }
            return arguments
        }
    }

    /// The proxy login the transport sends: the proxy credential (which answers an HTTP proxy's 407),
    /// else the user and password written in the proxy's URL.
    private func proxyLogin(_ url: URL) -> (user: String, password: String, answersChallenges: Bool)? {
        if let user = proxyCredential?.user { return (user, proxyCredential?.password ?? "", true) }
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        guard let user = components?.user else { return nil }
        return (user, components?.password ?? "", false)
    }
}
