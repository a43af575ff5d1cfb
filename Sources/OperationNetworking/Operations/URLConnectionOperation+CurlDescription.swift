import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - cURL description (new, not in AFNetworking)

extension URLConnectionOperation {
    /// A `curl` command line that, run by a POSIX shell, sends the same request as this operation,
    /// with the `Authorization`, `Proxy-Authorization` and `Cookie` values and the credential's
    /// password shown as `***` — `curlDescription(redactingSecrets: true)`. Safe to log.
    public var curlDescription: String {
        curlDescription(redactingSecrets: true)
    }

    /// A `curl` command line that, run by a POSIX shell, sends the same request as this operation:
    /// the method, the URL, every header the library sends (the request serializer's defaults included,
    /// and the cookies `HTTPCookieStorage.shared` adds), a text body inline with `--data-binary`
    /// (any other in-memory body through `printf`), `--compressed` when the library asks for compressed
    /// bodies (it does unless the request sets `Accept-Encoding`), `--anyauth --user` for the
    /// operation's `credential` (the library answers challenges with it), and the operation's `proxy`
    /// (see `CurlCommand.proxyArguments`: `--proxy`, `--socks5`, `--socks5-hostname`, `--noproxy`,
    /// `--proxy-user`). A request over a Unix domain socket (`unixSocketPath`, or an `http+unix` URL)
    /// gets `--unix-socket` and its socket's path, no proxy option, and the URL it sends there (for an
    /// `http+unix` URL, `http://localhost/…`). A body stream (a multipart form, a file) is not read: a
    /// comment names its size and the command sends no body.
    ///
    /// The `-H` options are the header lines the library itself hands libcurl for the request's first
    /// sending, made by the same code; a continued download's `Range` and the conditional fields of a
    /// cache revalidation are not part of it. libcurl adds `Host`, `Accept: */*` when the request names
    /// no `Accept`, the body's `Content-Length` (or `Transfer-Encoding`), and the `Authorization` that
    /// answers a challenge with the credential, in the library as in curl; headers curl's command line
    /// adds and the library does not send (`User-Agent`, the form `Content-Type` of `--data-binary`)
    /// are removed with `-H 'Name:'`.
    ///
    /// Each argument is single-quoted, so `'`, `"`, `$`, backquotes and newlines reach curl as they are.
    /// - Parameter redactingSecrets: `true` shows the `Authorization`, `Proxy-Authorization` and `Cookie`
    ///   values, the credential's and the proxy credential's passwords and a password in the URL or the
    ///   proxy's URL as `***`; `false` shows them (the command then sends exactly what the library sends).
    /// - Threading: any thread; it reads the request and settings under the operation's lock.
    public func curlDescription(redactingSecrets: Bool) -> String {
        let (request, configuration) = state.withLock { ($0.request, $0.configuration) }
        // Read outside the operation's lock: the policy has a lock of its own.
        let (credential, insecure, proxy, proxyCredential) = (configuration.credential,
                                                              configuration.securityPolicy?.allowInvalidCertificates ?? false,
                                                              configuration.proxy, configuration.proxyCredential)
        return CurlCommand(request: request, credential: credential, insecure: insecure, proxy: proxy,
                           proxyCredential: proxyCredential, redactingSecrets: redactingSecrets,
                           unixSocketPath: configuration.unixSocketPath).text
    }
}

/// Builds the command line of `curlDescription(redactingSecrets:)`. What the request sends is asked of
/// the code that sends it: the body of `OutgoingBody`, the header lines of `HopHeaderLines` (the
/// transfer's own list, turned into `-H` options); only what curl's command line does on its own and
/// the library does not is undone here.
/// - Threading: a value, used on one thread.
struct CurlCommand {
    let request: URLRequest
    let credential: URLCredential?
    let insecure: Bool
    let proxy: ProxySetting
    let proxyCredential: URLCredential?
    let redactingSecrets: Bool
    /// The operation's `unixSocketPath`.
    var unixSocketPath: String? = nil

    /// What a redacted secret is shown as.
    static let redacted = "***"
    /// Text bodies up to this size are an argument of curl; larger ones an argument of the shell's
    /// `printf` builtin piped into curl, because Linux refuses to `exec` a program with a single
    /// argument over 128 KiB.
    static let largestArgument = 64 * 1024
    /// Headers whose values are secrets.
    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The command: an optional comment line, then `curl` with one option per continued line.
    var text: String {
        let method = request.uppercasedMethod
        let outgoing = OutgoingBody(request, method: method)
        let (body, comment) = bodyToSend(outgoing)
        // One option (with its argument) per entry; each goes on a line of its own.
        var arguments: [String] = []
        switch method {
        case "HEAD": arguments.append("--head")
        case "GET" where body == nil: break
        case "POST" where body != nil: break   // curl infers POST from --data-binary
        default: arguments.append("-X \(CurlCommand.quote(method))")
        }
        arguments += headerArguments(outgoing, commandSendsBody: body != nil)
        var pipe = ""
        if let body {
            let (producer, argument) = CurlCommand.bodyArgument(body)
            pipe = producer.map { "\($0) | " } ?? ""
            arguments.append(argument)
        }
        if let user = credential?.user {
            // The library answers a challenge with the scheme the server offers; so does --anyauth.
            let password = redactingSecrets ? CurlCommand.redacted : (credential?.password ?? "")
            arguments.append("--anyauth --user \(CurlCommand.quote("\(user):\(password)"))")
        }
        if insecure { arguments.append("--insecure") }
        let socket = request.url.flatMap { try? UnixSocketRoute.route(for: $0, configured: unixSocketPath) }
        if let socket {
            // curl, like the library, sends no request over a socket to a proxy.
            arguments.append("--unix-socket \(CurlCommand.quote(socket.socketPath))")
        } else {
            arguments += proxyArguments
        }
        let url = urlString(socket?.url)
        if url.contains(where: { "[]{}".contains($0) }) { arguments.append("--globoff") }   // no URL globbing
        arguments.append(CurlCommand.quote(url))
        let command = pipe + (["curl"] + arguments).joined(separator: " \\\n  ")
        return [comment, command].compactMap { $0 }.joined(separator: "\n")
    }

    /// The body the command sends — the transport's, or for a body stream, which is not read here,
    /// none and the comment that names its size.
    private func bodyToSend(_ outgoing: OutgoingBody) -> (Data?, comment: String?) {
        switch outgoing {
        case .none: return (nil, nil)
        case .data(let data): return (data, nil)
        case .stream(_, let declaredLength):
            let size = declaredLength.map { "\($0) bytes" } ?? "of unknown size"
            return (nil, "# The request body is a stream (\(size)); it is not shown and this command sends none.")
        }
    }

    /// `-H` options, sorted by name: the lines the transport sends for the request's first hop
    /// (`HopHeaderLines`, no continuation: the command sends the request from its start), secrets
    /// redacted, and the removal (`Name:`) of the headers curl's command line would add and libcurl,
    /// as the library uses it, does not (`User-Agent`; the form `Content-Type` of `--data-binary`).
    private func headerArguments(_ outgoing: OutgoingBody, commandSendsBody: Bool) -> [String] {
        let offersEncodings = Transfer.offersEncodings(for: request.allHTTPHeaderFields)
        let cookieURL = request.url.flatMap { try? UnixSocketRoute.route(for: $0, configured: unixSocketPath) }?.url
        let sent = HopHeaderLines(request: request, body: outgoing, offersEncodings: offersEncodings,
                                  continuation: nil, cookieURL: cookieURL).lines
        var lines = sent.map { line -> (name: String, line: String) in
            let lowered = line.name.lowercased()
            guard redactingSecrets, line.value != nil, CurlCommand.secretHeaders.contains(lowered) else {
                return (lowered, line.curlLine)
            }
            return (lowered, HopHeaderLines.Line(name: line.name, value: CurlCommand.redacted).curlLine)
        }
        let names = Set(lines.map(\.name))
        if !names.contains("user-agent") { lines.append(("user-agent", "User-Agent:")) }
        if commandSendsBody && !names.contains("content-type") { lines.append(("content-type", "Content-Type:")) }
        var arguments = lines.sorted { $0.name < $1.name }.map { "-H \(CurlCommand.quote($0.line))" }
        // The library's own Accept-Encoding is one of the lines, so that curl's longer list does not
        // replace it; `--compressed` makes curl inflate the answer, as the library does.
        if offersEncodings { arguments.append("--compressed") }
        return arguments
    }

    /// The `--data-binary` option for `body`, and the shell command whose output it reads, if any.
    private static func bodyArgument(_ body: Data) -> (producer: String?, argument: String) {
        guard let text = String(data: body, encoding: .utf8), !text.utf8.contains(0) else {
            return ("printf '\(octal(body))'", "--data-binary @-")
        }
        if body.count <= largestArgument { return (nil, "--data-binary \(quote(text))") }
        return ("printf '%s' \(quote(text))", "--data-binary @-")
    }

    /// The URL (`sent`, the one an `http+unix` URL stands for, when given), its password (if any) redacted.
    private func urlString(_ sent: URL?) -> String {
        guard let url = sent ?? request.url else { return "" }
        return redactingSecrets ? URLRedaction.redactingPassword(of: url) : url.absoluteString
    }

    /// `text` in single quotes, for a POSIX shell: inside them every character is literal except `'`
    /// itself, which closes the quotes, is escaped, and reopens them.
    static func quote(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    /// `data` as a `printf` format of octal escapes (POSIX printf writes `\ddd` as that byte, NUL included;
    /// `printf` is a builtin of the shell, so the length of the format is no `exec` limit).
    static func octal(_ data: Data) -> String {
        var text = ""
        text.reserveCapacity(data.count * 4)
        for byte in data {
            let digits = String(byte, radix: 8)
            text += "\\" + String(repeating: "0", count: 3 - digits.count) + digits
        }
        return text
    }
}
