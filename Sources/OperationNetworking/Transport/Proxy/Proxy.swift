import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which proxy an operation's requests go through (new, not in AFNetworking; the counterpart of
/// `URLSessionConfiguration.connectionProxyDictionary`). Set it on the manager, which copies it to every
/// operation it creates and archives it, or on one operation before it starts.
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
