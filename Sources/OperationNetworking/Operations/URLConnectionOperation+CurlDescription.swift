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
    /// `--proxy-user`). A body stream (a multipart form, a file) is not read: a comment names its size
    /// and the command sends no body.
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
                           proxyCredential: proxyCredential, redactingSecrets: redactingSecrets).text
    }
}

/// Builds the command line of `curlDescription(redactingSecrets:)`, mirroring what the transport
/// puts on the wire (Transfer+Hop.swift): which headers it adds, drops or suppresses.
/// - Threading: a value, used on one thread.
struct CurlCommand {
    let request: URLRequest
    let credential: URLCredential?
    let insecure: Bool
    let proxy: ProxySetting
    let proxyCredential: URLCredential?
    let redactingSecrets: Bool

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
        let headers = request.allHTTPHeaderFields ?? [:]
        let (body, comment) = bodyToSend(method: method, headers: headers)
        // One option (with its argument) per entry; each goes on a line of its own.
        var arguments: [String] = []
        switch method {
        case "HEAD": arguments.append("--head")
        case "GET" where body == nil: break
        case "POST" where body != nil: break   // curl infers POST from --data-binary
        default: arguments.append("-X \(CurlCommand.quote(method))")
        }
        arguments += headerArguments(headers, hasBody: body != nil)
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
        arguments += proxyArguments
        let url = urlString
        if url.contains(where: { "[]{}".contains($0) }) { arguments.append("--globoff") }   // no URL globbing
        arguments.append(CurlCommand.quote(url))
        let command = pipe + (["curl"] + arguments).joined(separator: " \\\n  ")
        return [comment, command].compactMap { $0 }.joined(separator: "\n")
    }

    /// The body as the transport sends it (HEAD none, POST/PUT/PATCH an empty one at least), or for a
    /// body stream, which is not read here, the comment that names its size.
    private func bodyToSend(method: String, headers: [String: String]) -> (Data?, comment: String?) {
        guard method != "HEAD" else { return (nil, nil) }
        if let data = request.httpBody { return (data, nil) }
        if request.httpBodyStream != nil {
            let size = headers.first { $0.key.lowercased() == "content-length" }.map { "\($0.value) bytes" }
            return (nil, "# The request body is a stream (\(size ?? "of unknown size")); "
                + "it is not shown and this command sends none.")
        }
        return (["POST", "PUT", "PATCH"].contains(method) ? Data() : nil, nil)
    }

    /// `-H` options, sorted by name: the request's headers, the cookies the transport adds, and the
    /// removal (`Name:`) of headers curl's command line would add and the library does not send.
    private func headerArguments(_ headers: [String: String], hasBody: Bool) -> [String] {
        let names = Set(headers.keys.map { $0.lowercased() })
        var lines: [(name: String, line: String)] = []
        for (name, value) in headers {
            let lowered = name.lowercased()
            // curl computes the length of the body it sends; without a body the value would be a lie.
            if lowered == "content-length" { continue }
            let shown = redactingSecrets && CurlCommand.secretHeaders.contains(lowered) ? CurlCommand.redacted : value
            // "Name;" is curl's spelling of a header with an empty value, as the transport sends it.
            lines.append((lowered, shown.isEmpty ? "\(name);" : "\(name): \(shown)"))
        }
        if request.httpShouldHandleCookies && !names.contains("cookie"), let url = request.url,
           let header = CookieScope.headerValue(in: HTTPCookieStorage.shared, for: url) {
            lines.append(("cookie", "Cookie: \(redactingSecrets ? CurlCommand.redacted : header)"))
        }
        if !names.contains("user-agent") { lines.append(("user-agent", "User-Agent:")) }
        if hasBody && !names.contains("content-type") { lines.append(("content-type", "Content-Type:")) }
        if hasBody && !names.contains("expect") { lines.append(("expect", "Expect:")) }
        // The library's own offer, sent as a header so that curl's longer list does not replace it;
        // `--compressed` below still makes curl inflate the answer.
        if !names.contains("accept-encoding") {
            lines.append(("accept-encoding", Transfer.acceptEncodingLine))
        }
        var arguments = lines.sorted { $0.name < $1.name }.map { "-H \(CurlCommand.quote($0.line))" }
        if !names.contains("accept-encoding") { arguments.append("--compressed") }
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

    /// The URL, its password (if any) redacted.
    private var urlString: String {
        guard let url = request.url else { return "" }
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
