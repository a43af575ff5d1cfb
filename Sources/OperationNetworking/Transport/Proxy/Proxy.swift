import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which proxy an operation's requests go through (new, not in AFNetworking; the counterpart of
/// `URLSessionConfiguration.connectionProxyDictionary`). Set it on the manager, which copies it to every
/// operation it creates and archives it, or on one operation before it starts.
public enum ProxySetting: Equatable, Sendable {
    /// The process environment's proxies, as libcurl reads them at each new connection:
    /// `http_proxy` (lower case only), `https_proxy` / `HTTPS_PROXY`, `all_proxy` / `ALL_PROXY`, and
    /// the hosts in `no_proxy` / `NO_PROXY` go direct. The default.
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
        guard let url, let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        switch self {
        case .direct:
            return nil
        case .proxy(let proxy, let bypass):
            return ProxySetting.bypasses(host, bypass) ? nil : proxy
        case .environment:
            let noProxy = (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "")
                .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard !ProxySetting.bypasses(host, noProxy) else { return nil }
            let specific = scheme == "https" ? environment["https_proxy"] ?? environment["HTTPS_PROXY"]
                : environment["http_proxy"]
            guard let text = specific ?? environment["all_proxy"] ?? environment["ALL_PROXY"], !text.isEmpty else {
                return nil
            }
            return URL(string: text.contains("://") ? text : "http://\(text)")
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
