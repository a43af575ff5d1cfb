import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - What a hop sends: its body and its header lines

/// The body a hop sends for a request. The one rule: the transfer sends it (`configureMethodAndBody`)
/// and `curlDescription` shows it, so the two cannot disagree about whether a request has a body.
/// - Threading: a value.
enum OutgoingBody {
    /// None: a HEAD (whatever body it carries), or a GET, DELETE, OPTIONS… without a body.
    case none
    /// Bytes in memory. POST, PUT and PATCH without a body of their own send an empty one
    /// (`Content-Length: 0`): servers refuse those methods without a length.
    case data(Data)
    /// A stream, read while sending; `declaredLength` is the request's `Content-Length` (`nil`: unknown,
    /// sent chunked).
    case stream(InputStream, declaredLength: Int64?)

    /// The body `request` sends; `method` is its method as sent (`uppercasedMethod`).
    init(_ request: URLRequest, method: String) {
        if method == "HEAD" {
            self = .none
        } else if let data = request.httpBody {
            self = .data(data)
        } else if let stream = request.httpBodyStream {
            self = .stream(stream, declaredLength: request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) })
        } else if method == "POST" || method == "PUT" || method == "PATCH" {
            self = .data(Data())
        } else {
            self = .none
        }
    }

    /// Whether a body is sent at all (an empty one counts).
    var isSent: Bool {
        if case .none = self { return false }
        return true
    }
}

/// The header lines one hop hands libcurl (`CURLOPT_HTTPHEADER`): the request's own fields and what the
/// library adds to them or suppresses — `Expect:` without a body's 100-continue, its own
/// `Accept-Encoding`, the cookies of the process's storage, a continuation's `Range` and `If-Range`.
///
/// The one list of what a hop sends on top of what libcurl adds itself (`Host`, `Accept: */*` when the
/// request names no `Accept`, the body's `Content-Length` or `Transfer-Encoding`, the `Authorization`
/// of a credential answering a challenge): the transfer sends these lines, and `curlDescription` turns
/// the same lines into `-H` options, so a change to what is sent changes what is shown.
/// - Threading: a value; built on any thread (the cookie storage has a lock of its own).
struct HopHeaderLines {
    /// One header line.
    struct Line: Equatable {
        /// The field's name, as the request spells it.
        let name: String
        /// The value sent; `nil` for a field libcurl would add on its own that the hop suppresses.
        let value: String?

        /// The line as libcurl takes it: `Name: value`; `Name;` for an empty value (`Name:` would remove
        /// the field); `Name:` for a suppressed one. Made with the line, once.
        let curlLine: String

        init(name: String, value: String?) {
            self.name = name
            self.value = value
            if let value {
                curlLine = value.isEmpty ? "\(name);" : "\(name): \(value)"
            } else {
                curlLine = "\(name):"
            }
        }

        /// The library's `Accept-Encoding`, the same on every request, so made once.
        static let acceptEncoding = Line(name: "Accept-Encoding", value: Transfer.offeredEncodings)
    }

    /// The lines, the request's own fields first (in the order its dictionary gives them), then the
    /// library's.
    private(set) var lines: [Line] = []
    /// The single range of the caller's own `Range` field (see `Transfer.Hop.callerRange`); `nil` when it
    /// sent none, or when a continuation's range replaces it.
    private(set) var callerRange: CallerRange?
    /// Whether the lines carry a continuation's `Range`.
    private(set) var sendsContinuationRange = false
    /// The first field whose name or value would break the request's head (a CR, LF or NUL; a colon or
    /// space in the name): the transfer refuses the request. Its line is still in `lines`, which are then
    /// only shown (`curlDescription`), never sent.
    private(set) var invalidFieldName: String?

    /// The lines a hop sends for `request`. `body` is what it sends (`OutgoingBody(request)`);
    /// `offersEncodings` whether it asks for compressed bodies (`Transfer.offersEncodings(for:)`);
    /// `continuation` the point a continued download resumes from, if any (only one with a byte offset
    /// on a server that takes ranges sends a `Range`); `cookieURL` the URL whose cookies go (the request's
    /// unless it is an `http+unix` URL: then the `http://localhost/…` it stands for, see `UnixSocketRoute`);
    /// `added` the fields a cache revalidation adds (`Transfer.conditionalFields`), sent in place of the
    /// request's own of the same name.
    init(request: URLRequest, body: OutgoingBody, offersEncodings: Bool, continuation: ResumePoint?, cookieURL: URL? = nil,
         added: [(name: String, value: String)] = []) {
        // A continuation sends its own Range (and If-Range) in place of the caller's; without one (paused
        // before any byte arrived, or a range the library cannot continue) the caller's stand as sent.
        let continuation = continuation.flatMap { $0.offset > 0 && $0.rangesSupported ? $0 : nil }
        let hasBody = body.isSent
        var hasCookie = false, hasExpect = false
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            if added.contains(where: { asciiCaseInsensitiveEquals($0.name, name) }) { continue }
            if invalidFieldName == nil && !Transfer.isValidHeader(name: name, value: value) { invalidFieldName = name }
            let lowered = name.lowercased()
            // curl computes the length of the body it sends; a second, stale value would corrupt the request.
            if lowered == "content-length" && hasBody { continue }
            if lowered == "range" || lowered == "if-range", continuation != nil { continue }
            if lowered == "range" { callerRange = CallerRange(header: value) }
            hasCookie = hasCookie || lowered == "cookie"
            hasExpect = hasExpect || lowered == "expect"
            lines.append(Line(name: name, value: value))
        }
        // The cache's own values (a stored response's validators): checked as every field is.
        for (name, value) in added {
            if invalidFieldName == nil && !Transfer.isValidHeader(name: name, value: value) { invalidFieldName = name }
            lines.append(Line(name: name, value: value))
        }
        // No 100-continue round trip unless asked for (only a request with a body can have one).
        if !hasExpect && hasBody { lines.append(Line(name: "Expect", value: nil)) }
        // Sent as a line of its own, not through CURLOPT_ACCEPT_ENCODING, so libcurl does not decode.
        if offersEncodings { lines.append(.acceptEncoding) }
        // The value passes the check every header passes (`CookieScope.headerValue`).
        if request.httpShouldHandleCookies && !hasCookie, let url = cookieURL ?? request.url,
           let header = CookieScope.headerValue(in: Transfer.cookieStorage, for: url) {
            lines.append(Line(name: "Cookie", value: header))
        }
        if let resume = continuation {
            lines.append(Line(name: "Range", value: "bytes=\(resume.offset)-\(resume.rangeEnd.map(String.init) ?? "")"))
            if let validator = resume.validator { lines.append(Line(name: "If-Range", value: validator)) }
            sendsContinuationRange = true
        }
    }
}

extension Transfer {
    /// The encodings the library offers and decodes itself (`ContentDecoder`), so that a compressed
    /// body cut short is an error; libcurl only sends the header and passes the bytes through.
    static let offeredEncodings = "gzip, deflate, br, zstd"

    /// The process's cookie storage.
    static let cookieStorage = HTTPCookieStorage.shared

    /// Whether a hop for a request with `fields` asks for compressed bodies (and decodes them itself):
    /// unless the request sets an `Accept-Encoding` of its own.
    static func offersEncodings(for fields: [String: String]?) -> Bool {
        !(fields ?? [:]).keys.contains { asciiCaseInsensitiveEquals($0, "Accept-Encoding") }
    }

    /// Header names and values may not smuggle a line break or NUL onto the wire; a name has no colon
    /// or space either.
    static func isValidHeader(name: String, value: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 && $0 != 0x3A && $0 != 0x20 }
            && value.utf8.allSatisfy { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 }
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
