import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: the request's header lines

extension Transfer {
    /// The encodings the library offers and decodes itself (`ContentDecoder`), so that a compressed
    /// body cut short is an error; libcurl only sends the header and passes the bytes through.
    static let offeredEncodings = "gzip, deflate, br, zstd"

    /// The request header that offers them.
    static let acceptEncodingLine = "Accept-Encoding: \(offeredEncodings)"

    /// The process's cookie storage.
    static let cookieStorage = HTTPCookieStorage.shared

    /// The request's headers as curl lines, with the library's additions (`Expect:`, `Accept-Encoding`,
    /// cookies, a continuation's `Range`); reads the caller's `Range` into `hop.callerRange`. Throws
    /// `invalidHeader` for a field that would break the request's head.
    func headerLines(for request: URLRequest, url: URL) throws -> [String] {
        // A continuation sends its own Range (and If-Range) in place of the caller's; without one (paused
        // before any byte arrived, or a range the library cannot continue) the caller's stand as sent.
        let continuation = resumeFrom.flatMap { $0.offset > 0 && $0.rangesSupported ? $0 : nil }
        let hasBody = hop.upload != nil
        var lines: [String] = []
        var hasCookie = false, hasExpect = false
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            guard Transfer.isValidHeader(name: name, value: value) else {
                throw LibraryError.invalidHeader(name, url: url)
            }
            let lowered = name.lowercased()
            // curl computes the length of the body it sends; a second, stale value would corrupt the request.
            if lowered == "content-length" && hasBody { continue }
            if lowered == "range" || lowered == "if-range", continuation != nil { continue }
            if lowered == "range" { hop.callerRange = CallerRange(header: value) }
            hasCookie = hasCookie || lowered == "cookie"
            hasExpect = hasExpect || lowered == "expect"
            lines.append(Transfer.headerLine(name: name, value: value))
        }
        // No 100-continue round trip unless asked for (only a request with a body can have one).
        if !hasExpect && hasBody { lines.append("Expect:") }
        // Sent as a line of its own, not through CURLOPT_ACCEPT_ENCODING, so libcurl does not decode.
        if hop.asksForEncodings { lines.append(Transfer.acceptEncodingLine) }
        // The line passes the check every header passes (`CookieScope.headerValue`).
        if hop.handlesCookies && !hasCookie, let header = CookieScope.headerValue(in: Transfer.cookieStorage, for: url) {
            lines.append("Cookie: \(header)")
        }
        if let resume = continuation {
            lines.append("Range: bytes=\(resume.offset)-\(resume.rangeEnd.map(String.init) ?? "")")
            if let validator = resume.validator { lines.append("If-Range: \(validator)") }
            hop.sentRange = true
        }
        return lines
    }

    /// Header names and values may not smuggle a line break or NUL onto the wire; a name has no colon
    /// or space either.
    static func isValidHeader(name: String, value: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 && $0 != 0x3A && $0 != 0x20 }
            && value.utf8.allSatisfy { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 }
    }

    /// `Name: value` as curl takes it, or `Name;`, curl's spelling of a field with an empty value
    /// (`Name:` would remove it).
    static func headerLine(name: String, value: String) -> String {
        value.isEmpty ? "\(name);" : "\(name): \(value)"
    }

    /// `method` in upper case.
    static func uppercasedMethod(_ method: String) -> String {
        method.uppercased()
    }
}

extension URLRequest {
    /// The request's method in upper case, `GET` when it has none: the form the library sends and
    /// compares (cache, retries, redirects, HEAD checks, the serializer's URI methods).
    var uppercasedMethod: String { Transfer.uppercasedMethod(httpMethod ?? "GET") }
}
