import ArgumentParser
import Foundation

/// The URL of `onet request` as httpie completes and encodes it: the scheme added, the localhost
/// shorthand, unsafe characters percent-encoded, query items appended the way Python's `urlencode`
/// writes them.
enum RequestURL {
    /// Characters that never need encoding (RFC 3986 unreserved).
    private static let unreserved = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~".utf8)

    /// `text` with a scheme: `://x` → `x`; a word without `scheme://` gets `defaultScheme://`;
    /// `:8080/x` → `http://localhost:8080/x`, `:/x` → `http://localhost/x`.
    static func completed(_ text: String, defaultScheme: String) -> String {
        var url = text
        if url.hasPrefix("://") { url.removeFirst(3) }
        if hasScheme(url) { return url }
        if url.hasPrefix(":"), !url.hasPrefix("::") {
            let rest = url.dropFirst()
            let port = rest.prefix { $0.isASCII && $0.isNumber }
            let tail = rest.dropFirst(port.count)
            if tail.isEmpty || tail.hasPrefix("/") {
                return "\(defaultScheme)://localhost" + (port.isEmpty ? "" : ":\(port)") + tail
            }
        }
        return "\(defaultScheme)://" + url
    }

    /// Whether `text` starts with `scheme://` (a letter, then letters, digits, `+`, `-`, `.`).
    private static func hasScheme(_ text: String) -> Bool {
        guard let range = text.range(of: "://"), let first = text.first, first.isASCII, first.isLetter else { return false }
        return text[..<range.lowerBound].allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// The URL the request goes to: `text` completed, its unsafe characters encoded (as `requests`
    /// does: `%XX` kept, an escaped unreserved character decoded), then `query` appended to its query
    /// string. The user information is taken out (`user`, `password`): it is sent as Basic credentials.
    /// Throws a `ValidationError` for what is not an http(s) URL with a host.
    static func resolve(_ text: String, query: [(String, String)], defaultScheme: String) throws
        -> (url: URL, user: String?, password: String?) {
        let completed = completed(text, defaultScheme: defaultScheme)
        var encoded = requoted(completed)
        if !query.isEmpty {
            let fragmentStart = encoded.firstIndex(of: "#") ?? encoded.endIndex
            let fragment = encoded[fragmentStart...]
            var head = String(encoded[..<fragmentStart])
            head += (head.contains("?") ? (head.hasSuffix("?") ? "" : "&") : "?") + formEncoded(query)
            encoded = head + fragment
        }
        guard var components = URLComponents(string: encoded), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
              isHostName(components.percentEncodedHost ?? host) else {
            throw ValidationError("Invalid URL '\(text)': expected http(s)://host[:port]/path.")
        }
        let user = components.user, password = components.password
        components.user = nil
        components.password = nil
        components.fragment = nil   // never sent
        if components.percentEncodedPath.isEmpty { components.percentEncodedPath = "/" }
        guard let url = components.url else {
            throw ValidationError("Invalid URL '\(text)': expected http(s)://host[:port]/path.")
        }
        return (url, user, password)
    }

    /// A host as a URL may name it: letters, digits, `-`, `_`, `.`, or an IPv6 literal in brackets
    /// (`ht tp` is no host: it is refused here rather than by the transport).
    private static func isHostName(_ host: String) -> Bool {
        if host.hasPrefix("[") { return host.hasSuffix("]") && host.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } }
        return host.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }
    }

    /// `text` with every character outside the unreserved and reserved sets percent-encoded (UTF-8),
    /// existing `%XX` escapes kept (an escaped unreserved character decoded) and a `%` that starts no
    /// escape encoded: the URL `requests` sends for what a user typed.
    static func requoted(_ text: String) -> String {
        let safe = unreserved.union("!#$&'()*+,/:;=?@[]~%".utf8)
        let bytes = Array(text.utf8)
        var result = [UInt8]()
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                if index + 2 < bytes.count, isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2]),
                   let value = UInt8(String(decoding: bytes[index + 1...index + 2], as: UTF8.self), radix: 16) {
                    if unreserved.contains(value) {
                        result.append(value)
                    } else {
                        result.append(contentsOf: bytes[index...index + 2])
                    }
                    index += 3
                    continue
                }
                result.append(contentsOf: Array("%25".utf8))
            } else if safe.contains(byte) {
                result.append(byte)
            } else {
                result.append(contentsOf: percentEscape(byte))
            }
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// `name=value&name=value` as Python's `urlencode` writes pairs: space as `+`, every byte outside
    /// the unreserved set as `%XX`.
    static func formEncoded(_ pairs: [(String, String)]) -> String {
        pairs.map { plusEncoded($0.0) + "=" + plusEncoded($0.1) }.joined(separator: "&")
    }

    /// One name or value of a form or query (`quote_plus`).
    static func plusEncoded(_ text: String) -> String {
        var result = [UInt8]()
        for byte in text.utf8 {
            if unreserved.contains(byte) {
                result.append(byte)
            } else if byte == UInt8(ascii: " ") {
                result.append(UInt8(ascii: "+"))
            } else {
                result.append(contentsOf: percentEscape(byte))
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    private static func percentEscape(_ byte: UInt8) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        return [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
    }

    /// `host_port` (or `host`), the folder a named session lives in, as httpie names it: from the
    /// `Host` header when one is given, else from the URL.
    static func sessionFolder(for url: URL, hostHeader: String?) -> String {
        let netloc = hostHeader ?? (url.host ?? "") + (url.port.map { ":\($0)" } ?? "")
        return netloc.replacingOccurrences(of: ":", with: "_")
    }
}
