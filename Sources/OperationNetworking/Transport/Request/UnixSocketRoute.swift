import Foundation

/// A request that goes over a Unix domain socket instead of TCP: the socket's path (libcurl's
/// `CURLOPT_UNIX_SOCKET_PATH`) and the URL sent over it, whose host names the `Host` field.
///
/// Two ways lead there. An operation's `unixSocketPath` sends its request to the URL it names over
/// that socket (`Host` is the URL's host, as `curl --unix-socket`). An `http+unix` or `https+unix`
/// URL (AsyncHTTPClient's convention) carries the socket's percent-encoded path as its host:
/// `http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info` is `http://localhost/v1.43/info` sent over
/// `/var/run/docker.sock`, with `Host: localhost` (what curl sends for that command; AsyncHTTPClient
/// sends no `Host` at all, which an HTTP/1.1 server may answer with 400). Such a URL's socket wins
/// over the operation's `unixSocketPath`.
/// - Threading: a value.
struct UnixSocketRoute: Equatable {
    /// The socket's path, as written (no NUL byte, never empty).
    let socketPath: String
    /// The URL sent over the socket: the request's own, or `http(s)://localhost/…` for an `http+unix` URL.
    let url: URL

    /// The `Host` of the requests `http+unix` URLs make.
    static let unixURLHost = "localhost"

    /// The scheme sent for each Unix-socket scheme.
    private static func wireScheme(of scheme: String?) -> String? {
        switch scheme?.lowercased() {
        case "http+unix": return "http"
        case "https+unix": return "https"
        default: return nil
        }
    }

    /// Whether `url` is an `http+unix` or `https+unix` URL.
    static func isUnixURL(_ url: URL?) -> Bool {
        wireScheme(of: url?.scheme) != nil
    }

    /// The route of a request to `url` when the operation's `unixSocketPath` is `configured`: `nil` for
    /// a request over TCP (no socket configured, or an empty path). Throws a `URLError(.badURL)` for an
    /// `http+unix` URL whose host is no usable socket path, and for a path with a NUL byte (libcurl
    /// would read the path only up to it, and connect elsewhere).
    static func route(for url: URL, configured: String?) throws -> UnixSocketRoute? {
        if let scheme = wireScheme(of: url.scheme) { return try unixURLRoute(url, scheme: scheme) }
        guard let configured, !configured.isEmpty else { return nil }
        guard !configured.utf8.contains(0) else {
            throw TransportError.make(.badURL, "The Unix domain socket path contains a NUL byte.", url: url)
        }
        return UnixSocketRoute(socketPath: configured, url: url)
    }

    /// The route an `http+unix` URL names, read from its text: `scheme://` then the percent-encoded
    /// path up to the first `/`, `?` or `#`. The host must be percent-encoded whole: a raw `@` or `:`
    /// (user information, a port) is refused, not guessed at.
    private static func unixURLRoute(_ url: URL, scheme: String) throws -> UnixSocketRoute {
        func refuse(_ why: String) -> URLError {
            TransportError.make(.badURL, "The \(url.scheme ?? "") URL \(why).", url: url)
        }
        let text = url.absoluteString
        guard let separator = text.range(of: "://") else { throw refuse("has no socket path") }
        let afterScheme = text[separator.upperBound...]
        let end = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let host = afterScheme[..<end]
        guard !host.contains("@"), !host.contains(":") else {
            throw refuse("names user information or a port: its host is the percent-encoded socket path alone")
        }
        guard let path = String(host).removingPercentEncoding, !path.isEmpty else {
            throw refuse("has no socket path (its host is the percent-encoded path)")
        }
        guard !path.utf8.contains(0) else { throw refuse("names a socket path with a NUL byte") }
        var rest = String(afterScheme[end...])
        if !rest.hasPrefix("/") { rest = "/" + rest }
        guard let wire = URL(string: "\(scheme)://\(unixURLHost)\(rest)") else { throw refuse("has no valid path") }
        return UnixSocketRoute(socketPath: path, url: wire)
    }
}
