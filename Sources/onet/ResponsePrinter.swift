import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// How `onet request` shows a request and its response: heads and metrics on standard error
/// (--verbose), the body on standard output.
enum ResponsePrinter {
    /// Request headers whose values are never printed.
    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// `> METHOD target HTTP/1.1`, the Host and the request's headers (secrets as `***`), a blank `>`.
    static func writeRequestHead(_ request: URLRequest?, to handle: FileHandle) {
        guard let request, let url = request.url else { return }
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        var lines = ["> \(request.httpMethod ?? "GET") \(target) HTTP/1.1"]
        if let host = url.host { lines.append("> Host: \(host)\(url.port.map { ":\($0)" } ?? "")") }
        for (name, value) in (request.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key.lowercased() < $1.key.lowercased() }) {
            lines.append("> \(name): \(secretHeaders.contains(name.lowercased()) ? "***" : value)")
        }
        lines.append(">")
        StandardStreams.write(lines.joined(separator: "\n") + "\n", to: handle)
    }

    /// `< HTTP/x 200 OK`, the response headers, a blank `<`, then one `*` line of metrics.
    static func writeResponseHead(_ response: HTTPURLResponse, metrics: TransferMetrics?, to handle: FileHandle) {
        let version = metrics?.httpVersion.map { $0.hasPrefix("HTTP") ? $0 : "HTTP/" + $0 } ?? "HTTP/1.1"
        var lines = ["< \(version) \(response.statusCode) \(reasonPhrase(response.statusCode))"]
        let headers = response.allHeaderFields.compactMap { key, value -> (String, String)? in
            guard let name = key as? String else { return nil }
            return (name, "\(value)")
        }
        for (name, value) in headers.sorted(by: { $0.0.lowercased() < $1.0.lowercased() }) {
            lines.append("< \(name): \(value)")
        }
        lines.append("<")
        if let metrics {
            func ms(_ seconds: TimeInterval) -> String { String(format: "%.1f ms", seconds * 1000) }
            lines.append("* \(metrics.remoteAddress ?? "?"): DNS \(ms(metrics.nameLookup)), connect \(ms(metrics.connect)), "
                         + (response.url?.scheme == "https" ? "TLS \(ms(metrics.tlsHandshake)), " : "") + "first byte \(ms(metrics.firstByte)), total \(ms(metrics.total)); "
                         + "connection \(metrics.connectionReused ? "reused" : "new"), redirects \(metrics.redirectCount), "
                         + "attempts \(metrics.attempts)")
        }
        StandardStreams.write(lines.joined(separator: "\n") + "\n", to: handle)
    }

    /// The body on standard output: raw bytes when it is not a terminal; on a terminal, JSON indented
    /// and coloured, text as it is, and a note instead of binary data. False when standard output
    /// refused the bytes (a full disk, a closed descriptor).
    static func writeBody(_ body: Data, contentType: String?) -> Bool {
        guard isatty(STDOUT_FILENO) == 1 else {
            return StandardStreams.write(body, to: .standardOutput)
        }
        let declaredJSON = contentType?.lowercased().contains("json") ?? false
        if (declaredJSON || body.first.map { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") } ?? false),
           (try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])) != nil {
            return StandardStreams.write(JSONHighlighter(colours: true).format(body), to: .standardOutput)
        } else if let text = String(data: body, encoding: .utf8), !text.contains("\u{0}") {
            return StandardStreams.write(text.hasSuffix("\n") ? text : text + "\n", to: .standardOutput)
        } else {
            StandardStreams.write("onet: binary body (\(body.count) bytes) not shown on a terminal; use --output FILE or a pipe\n",
                                  to: .standardError)
            return true
        }
    }

    /// One line for an error: its description, curl's own message when it adds something, the URL;
    /// the password of any URL in it as `***`.
    static func describe(_ error: NSError) -> String {
        var text = error.localizedDescription
        if let curl = error.userInfo[CurlErrorMessageKey] as? String, !curl.isEmpty, !text.contains(curl) {
            text += " (\(curl))"
        }
        if let url = (error.userInfo[NSURLErrorFailingURLErrorKey] as? URL)?.absoluteString, !text.contains(url) {
            text += " — \(url)"
        }
        return URLRedaction.redactingPasswords(in: text)
    }

    /// The standard reason phrase of common statuses (the server's own is not kept).
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return ""
        }
    }
}

/// Certificates read from the files named by an option, PEM (one or more) or DER. The library's public
/// reader, `SecurityPolicy.certificates(in:)`, takes a directory, and its PEM parser is internal.
enum CertificateFile {
    /// The DER certificates in `paths`; a missing file or one without a certificate is a usage error
    /// naming `option`.
    static func load(_ paths: [String], option: String) throws -> Set<Data> {
        var result = Set<Data>()
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("\(option): cannot read \(path).")
            }
            let found = pemCertificates(data)
            if !found.isEmpty {
                result.formUnion(found)
            } else if data.first == 0x30 {   // a DER SEQUENCE; the policy checks it when it is used
                result.insert(data)
            } else {
                throw ValidationError("\(option): no certificate in \(path) (expected PEM or DER).")
            }
        }
        return result
    }

    /// The base64 blocks between `-----BEGIN CERTIFICATE-----` and `-----END CERTIFICATE-----` lines.
    private static func pemCertificates(_ data: Data) -> [Data] {
        let text = String(decoding: data, as: UTF8.self)
        var result: [Data] = []
        var body: String?
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line == "-----BEGIN CERTIFICATE-----" {
                body = ""
            } else if line == "-----END CERTIFICATE-----" {
                if let encoded = body, let der = Data(base64Encoded: encoded) { result.append(der) }
                body = nil
            } else if body != nil {
                body? += line
            }
        }
        return result
    }
}
