import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLConnectionOperation {
    /// The Unix domain socket the request goes over instead of TCP (libcurl's
    /// `CURLOPT_UNIX_SOCKET_PATH`, `curl --unix-socket`), as Docker's API at `/var/run/docker.sock`
    /// or Podman's wants. Default `nil`: TCP, as AFNetworking. An empty path is `nil`. Set it before the
    /// operation starts; the manager sets its own; `copy()` keeps it, and it is archived with the
    /// operation.
    ///
    /// - The URL's host still names the `Host` field (`http://localhost/v1.43/info` sends
    ///   `Host: localhost`) and scopes cookies, as curl does (so sockets whose URLs name the same host
    ///   share cookies; give each its own host name to keep them apart); its port means nothing over a
    ///   socket.
    /// - An `http+unix` (or `https+unix`) URL works without this property (AsyncHTTPClient's
    ///   convention): its host is the socket's percent-encoded path,
    ///   `http+unix://%2Fvar%2Frun%2Fdocker.sock/v1.43/info`, and the request sent is
    ///   `http://localhost/v1.43/info` (`Host: localhost`, what curl sends for that command;
    ///   AsyncHTTPClient sends none). Its socket wins over this property.
    /// - Connections are kept and reused per socket: two sockets whose requests name the same host
    ///   never share a connection, nor the network thread's per-origin limits and HTTP/2 probe.
    /// - Redirects: one to the same host (any relative `Location`) goes over the same socket; one to
    ///   another host, or out of an `http+unix` URL's socket, is not followed, and the 3xx is the
    ///   response (curl would send it to the same socket whatever its host; AsyncHTTPClient to TCP).
    ///   A redirect from TCP onto a socket (to an `http+unix` URL) fails with `URLError(.unsupportedURL)`.
    /// - No proxy: the request goes straight to the socket whatever `proxy` says (so does curl).
    /// - No HTTP cache: a response over a socket is neither answered from `urlCache` nor stored in it
    ///   (the cache's key is the URL, which does not say which socket, or whether one, served it).
    /// - Errors: a socket that does not exist or refuses fails with `URLError(.cannotConnectToHost)`
    ///   whose description names the path and the reason; a path with a NUL byte, or an `http+unix`
    ///   URL whose host is no path, with `URLError(.badURL)`.
    public var unixSocketPath: String? {
        get { self[setting: \.unixSocketPath] }
        set { self[setting: \.unixSocketPath] = newValue }
    }
}
