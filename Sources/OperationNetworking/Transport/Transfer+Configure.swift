import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: request → easy handle

extension Transfer {
    /// The encodings the library offers and decodes itself (`ContentDecoder`), so that a compressed
    /// body cut short is an error; libcurl only sends the header and passes the bytes through.
    static let offeredEncodings = "gzip, deflate, br, zstd"

    /// The request header that offers them.
    static let acceptEncodingLine = "Accept-Encoding: \(offeredEncodings)"

    /// The header lines of a request with no fields of its own, no body and no cookie to send.
    static let encodingsOnlyLines = [acceptEncodingLine]

    /// libcurl's receive buffer per easy handle: 256 KiB instead of its 16 KiB default, so a large body
    /// takes a sixteenth of the socket reads (`bench/README.md` has the measurements). Write callbacks
    /// still come in pieces of at most 16 KiB (libcurl cuts them). libcurl 7.88 allocates the buffer
    /// for each transfer and frees it at the end (measured: one 262,145-byte `malloc` a request;
    /// `MallocThresholds` keeps it on the heap), and only the pages a response reaches are touched: a
    /// 1 KiB response costs one.
    static let receiveBufferSize = 256 * 1024

    /// Sets up `easy` for the current hop. Throws a `URLError` for a request curl must not see.
    ///
    /// A handle last configured for a plain request of the same kind keeps its options: only the
    /// URL, the transfer its callbacks reach, the body (its length and source) and (when they differ) the headers
    /// are set. Anything else starts from `curl_easy_reset`.
    func configure(_ easy: CurlEasyHandle) throws {
        assertOnNetworkThread()
        let request = currentRequest
        guard let url = request.url else {
            throw TransportError.make(.badURL, "The request has no URL.", url: nil)
        }
        hopURL = url
        hopHandlesCookies = request.httpShouldHandleCookies
        let absoluteString = url.absoluteString
        let isHTTPS = try checkedIsHTTPS(url, absoluteString: absoluteString)
        let method = request.uppercasedMethod
        // The method goes to CURLOPT_CUSTOMREQUEST verbatim: anything but a token would rewrite the
        // request line (CR LF starts header lines of the caller's choosing). "GET" is one already.
        if method != "GET", case let given = request.httpMethod ?? "", !HTTPToken.isToken(given) {
            throw LibraryError.invalidMethod(given, url: url)
        }
        let timeoutMilliseconds = max(Int(min(timeoutNanoseconds / 1_000_000, UInt64(Int32.max))), 1)
        // The fields once: corelibs builds this dictionary on every call, and looking one name up
        // through `value(forHTTPHeaderField:)` costs more than lowering a few names here.
        let fields = request.allHTTPHeaderFields ?? [:]
        let asksForEncodings = !fields.keys.contains { $0.utf8.count == 15 && $0.lowercased() == "accept-encoding" }
        let environmentNamesProxy = proxy == .environment
            && (network?.environmentNamesProxy() ?? Transfer.environmentNamesProxy())
        let plain = plainConfiguration(request, method: method, isHTTPS: isHTTPS, asksForEncodings: asksForEncodings,
                                       environmentNamesProxy: environmentNamesProxy,
                                       timeoutMilliseconds: timeoutMilliseconds)
        let userdata = Unmanaged.passUnretained(self).toOpaque()
        self.asksForEncodings = asksForEncodings
        if let plain, easy.plainConfiguration == plain {
            easy.clearError()
            upload?.close()
            upload = nil
            try easy.set(CURLOPT_URL, absoluteString)
            if method != "GET", let body = request.httpBody {
                // Method, upload mode and the body callbacks stay from the last request of this kind.
                try attach(UploadSource(data: body), to: easy)
            }
            try easy.setHeaders(headerLines(for: request, fields: fields, url: url))
            beginHop(easy, userdata: userdata)
            return
        }
        if easy.isConfigured { easy.reset() }
        easy.isConfigured = true
        try easy.installErrorBuffer()
        try easy.set(CURLOPT_URL, absoluteString)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_NOSIGNAL, true)
        try easy.set(CURLOPT_FOLLOWLOCATION, false)   // redirects are decided by the library, hop by hop
        try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // Over TLS the connection may turn out HTTP/2: a burst waits for the first connection to a host
        // to say so and then shares it, instead of opening one connection per request.
        try easy.set(CURLOPT_PIPEWAIT, isHTTPS)
        try configureTLS(easy, url: url)
        try configureProxy(easy, environmentNamesProxy: environmentNamesProxy)
        try configureCredentials(easy)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, timeoutMilliseconds)
        try easy.set(CURLOPT_MAXAGE_CONN, network?.idleConnectionLifetime ?? 30)
        // A request, not an order: libcurl 7.88 refuses a new size while the handle still holds a buffer
        // (after a transfer that failed, say), and reads no more than that buffer holds.
        _ = ccurl_easy_setopt_long(easy.raw, CURLOPT_BUFFERSIZE, Transfer.receiveBufferSize)

        // Every callback's data is the handle's header block, whose `owner` says which transfer it serves
        // (see CurlCallbacks.swift); `beginHop` sets it.
        let callbackData = easy.callbackData
        // The network thread finds the transfer of a finished handle through the block's owner.
        try easy.set(CURLOPT_PRIVATE, pointer: callbackData)
        try check(ccurl_easy_setopt_write_function(easy.raw, CURLOPT_HEADERFUNCTION, ccurl_header_callback))
        try easy.set(CURLOPT_HEADERDATA, pointer: callbackData)
        try check(ccurl_easy_setopt_write_function(easy.raw, CURLOPT_WRITEFUNCTION, curlWriteCallback))
        try easy.set(CURLOPT_WRITEDATA, pointer: callbackData)
        try check(ccurl_easy_setopt_opensocket_function(easy.raw, curlOpenSocketCallback))
        try easy.set(CURLOPT_OPENSOCKETDATA, pointer: callbackData)
        try check(ccurl_easy_setopt_prereq_function(easy.raw, curlPrerequestCallback))
        try easy.set(CURLOPT_PREREQDATA, pointer: callbackData)
        if let network {
            // The connection keeps these past this transfer: the data is the thread, not the transfer.
            try check(ccurl_easy_setopt_closesocket_function(easy.raw, curlCloseSocketCallback))
            try easy.set(CURLOPT_CLOSESOCKETDATA, pointer: Unmanaged.passUnretained(network).toOpaque())
        }

        try configureMethodAndBody(easy, method: method, request: request)
        try easy.setHeaders(headerLines(for: request, fields: fields, url: url))
        if asksForEncodings {
            // The header itself is one of `headerLines`; this only keeps libcurl from decoding.
            try easy.set(CURLOPT_HTTP_CONTENT_DECODING, false)
        }
        easy.plainConfiguration = plain
        beginHop(easy, userdata: userdata)
    }

    /// Whether `url` is https; throws unless it is an http or https URL with a host. The network
    /// thread remembers the last URL that passed (same string, same parse), since parsing its host
    /// costs more than comparing the string.
    private func checkedIsHTTPS(_ url: URL, absoluteString: String) throws -> Bool {
        if let last = network?.lastCheckedURL, last.absoluteString == absoluteString {
            tlsOrigin = last.tlsOrigin
            return last.tlsOrigin != nil
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw TransportError.make(.unsupportedURL, "Only http and https URLs are supported.", url: url)
        }
        guard let host = url.host, !host.isEmpty else {
            throw TransportError.make(.badURL, "The URL has no host.", url: url)
        }
        tlsOrigin = scheme == "https" ? "\(host.lowercased()):\(url.port ?? 443)" : nil
        network?.lastCheckedURL = (absoluteString, tlsOrigin)
        return scheme == "https"
    }

    /// The plain kind of this hop's request, or `nil` when it needs options beyond URL, callback data,
    /// headers and an in-memory body (a body stream, a GET or HEAD with a body, a body-less method
    /// other than GET, TLS or credential settings, a resumed range).
    private func plainConfiguration(_ request: URLRequest, method: String, isHTTPS: Bool, asksForEncodings: Bool,
                                    environmentNamesProxy: Bool, timeoutMilliseconds: Int) -> PlainConfiguration? {
        let hasBody = request.httpBody != nil
        guard hasBody ? method != "GET" && method != "HEAD" : method == "GET", request.httpBodyStream == nil,
              settingsArePlain, serverCredential == nil, proxyCredential == nil else { return nil }
        return PlainConfiguration(isHTTPS: isHTTPS, asksForEncodings: asksForEncodings,
                                  environmentNamesProxy: environmentNamesProxy,
                                  connectTimeoutMilliseconds: timeoutMilliseconds, method: method)
    }

    /// Per-hop state back to its start; `easy`'s header block empty and this transfer's.
    private func beginHop(_ easy: CurlEasyHandle, userdata: UnsafeMutableRawPointer) {
        ccurl_header_block_reset(easy.headerBlock)
        easy.headerBlock.pointee.owner = userdata
        headerParser = ResponseHeaderParser()
        requiredBodyEnd = nil
        tunnelAnswer = nil
        hop = .awaitingHead
        decoder = nil
        socketOpenError = 0
        hopStartTime = monotonicNow()
        lastActivity = hopStartTime
    }

    /// Method and request body: HEAD has none, bodies are streamed by the read callback.
    private func configureMethodAndBody(_ easy: CurlEasyHandle, method: String, request: URLRequest) throws {
        upload?.close()
        upload = nil
        if let data = request.httpBody {
            upload = UploadSource(data: data)
        } else if let stream = request.httpBodyStream {
            let declared = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
            upload = UploadSource(stream: stream, length: declared)
        } else if ["POST", "PUT", "PATCH"].contains(method) {
            upload = UploadSource(data: Data())   // an explicit empty body: Content-Length: 0
        }
        if method == "HEAD" {
            try easy.set(CURLOPT_NOBODY, true)
            upload = nil
            return
        }
        guard let upload else {
            if method == "GET" {
                try easy.set(CURLOPT_HTTPGET, true)
            } else {
                try easy.set(CURLOPT_CUSTOMREQUEST, method)
            }
            return
        }
        try easy.set(CURLOPT_UPLOAD, true)
        try easy.set(CURLOPT_CUSTOMREQUEST, method)
        try check(ccurl_easy_setopt_read_function(easy.raw, curlReadCallback))
        try check(ccurl_easy_setopt_seek_function(easy.raw, curlSeekCallback))
        try easy.set(CURLOPT_READDATA, pointer: easy.callbackData)
        try easy.set(CURLOPT_SEEKDATA, pointer: easy.callbackData)
        try attach(upload, to: easy)
    }

    /// The part of a body set for every request, also on a handle kept configured for the method: its
    /// length (the read and seek callbacks reach the transfer through the handle's header block).
    private func attach(_ source: UploadSource, to easy: CurlEasyHandle) throws {
        upload = source
        if let length = source.length {
            try easy.set(CURLOPT_INFILESIZE_LARGE, offset: length)
        }
        bytesSent = 0
    }

    /// `method` in upper case, as is when it already is (nearly always): `uppercased()` cost about 120
    /// instructions a request even for "GET".
    static func uppercasedMethod(_ method: String) -> String {
        // "GET" is told by one compare of the small string's bits; a scan of its bytes cost about 150.
        if method == "GET" { return method }
        return method.utf8.contains { $0 >= 0x80 || (0x61...0x7A).contains($0) } ? method.uppercased() : method
    }

    /// The request's headers as curl lines, with the library's additions (cookies, Range, no Expect).
    private func headerLines(for request: URLRequest, fields: [String: String], url: URL) throws -> [String] {
        // The commonest request (no fields of its own, no body, no continuation, no cookie to send)
        // gets one shared array: no lines made, and the handle's equal check sees the same buffer.
        if fields.isEmpty, upload == nil, resumeFrom == nil,
           !hopHandlesCookies || (network?.cookieStorageIsEmpty() ?? Transfer.cookieStorageIsEmpty()) {
            callerRange = nil
            sentRange = false
            return asksForEncodings ? Transfer.encodingsOnlyLines : []
        }
        // A continuation sends its own Range (and If-Range) in place of the caller's; without one (paused
        // before any byte arrived, or a range the library cannot continue) the caller's stand as sent.
        let continuation = resumeFrom.flatMap { $0.offset > 0 && $0.rangesSupported ? $0 : nil }
        var lines: [String], hasCookie: Bool
        if continuation == nil, let memo = network?.fieldLinesMemo,
           memo.hasUpload == (upload != nil), memo.holds(fields) {
            lines = memo.lines
            hasCookie = memo.hasCookie
            callerRange = memo.callerRange
        } else {
            (lines, hasCookie) = try fieldLines(fields, continuation: continuation, url: url)
            if continuation == nil {
                network?.fieldLinesMemo = FieldLinesMemo(fields: fields.map { ($0.key, $0.value) }, hasUpload: upload != nil,
                                                         lines: lines, hasCookie: hasCookie, callerRange: callerRange)
            }
        }
        // An empty storage is told cheaply (see `NetworkThread.AdmissionPass`); matching cookies to the
        // URL parses its host (most of the cost).
        // The line passes the check every header passes (`CookieScope.headerValue`).
        if hopHandlesCookies && !hasCookie, !(network?.cookieStorageIsEmpty() ?? Transfer.cookieStorageIsEmpty()),
           let header = CookieScope.headerValue(in: Transfer.cookieStorage, for: url) {
            lines.append("Cookie: \(header)")
        }
        sentRange = false
        if let resume = continuation {
            lines.append("Range: bytes=\(resume.offset)-\(resume.rangeEnd.map(String.init) ?? "")")
            if let validator = resume.validator { lines.append("If-Range: \(validator)") }
            sentRange = true
        }
        return lines
    }

    /// What `fieldLines` made of one request's fields, kept by the network thread for the next request:
    /// when that one carries the same fields, byte for byte (see `holds`), and the same body fact, its
    /// lines are these (the same fields make the same `Accept-Encoding` choice). Only requests with no
    /// continuation are kept or served (a continuation drops the caller's `Range`); cookies and ranges
    /// are added after. It holds one request's fields until a request with other fields replaces them.
    struct FieldLinesMemo {
        /// The request's fields the lines were made of, in the order its dictionary gave them.
        let fields: [(name: String, value: String)]
        /// Whether the request had a body (its `Content-Length` dropped, `Expect:` added).
        let hasUpload: Bool
        /// The lines: the fields, `Expect:`, `Accept-Encoding`.
        let lines: [String]
        /// Whether the fields carried a `Cookie`.
        let hasCookie: Bool
        /// The caller's `Range` as `fieldLines` read it.
        let callerRange: CallerRange?

        /// Whether `other` has the same names with the same values, in the same bytes. Not `==`:
        /// `String`'s (and so `Dictionary`'s) takes canonically equivalent spellings as equal, which
        /// would send one request's bytes for another's. Each field is looked for at its own position
        /// first, then among all: a request has a few fields, and a hash a field cost more than this.
        func holds(_ other: [String: String]) -> Bool {
            guard fields.count == other.count else { return false }
            var position = 0
            for (name, value) in other {
                let kept: (name: String, value: String)
                if fields[position].name.isSameBytes(as: name) {
                    kept = fields[position]
                } else if let found = fields.first(where: { $0.name.isSameBytes(as: name) }) {
                    kept = found
                } else {
                    return false
                }
                guard kept.value.isSameBytes(as: value) else { return false }
                position += 1
            }
            return true
        }
    }

    /// The lines of a request's own fields, `Expect:` and `Accept-Encoding`; sets `callerRange`.
    /// Throws `invalidHeader` for a field that would break the request's head.
    private func fieldLines(_ fields: [String: String], continuation: ResumePoint?,
                            url: URL) throws -> (lines: [String], hasCookie: Bool) {
        var lines: [String] = []
        lines.reserveCapacity(fields.count + 2)
        var hasCookie = false, hasExpect = false
        callerRange = nil
        for (name, value) in fields {
            guard Transfer.isValidHeader(name: name, value: value) else {
                throw LibraryError.invalidHeader(name, url: url)
            }
            // Only a name as long as one of the five below is lowered and compared (most are not).
            if Transfer.mayNameSpecialField(name) {
                let lowered = name.lowercased()
                // curl computes the length of the body it sends; a second, stale value would corrupt the request.
                if lowered == "content-length" && upload != nil { continue }
                if lowered == "range" || lowered == "if-range", continuation != nil { continue }
                if lowered == "range" { callerRange = CallerRange(header: value) }
                hasCookie = hasCookie || lowered == "cookie"
                hasExpect = hasExpect || lowered == "expect"
            }
            lines.append(Transfer.headerLine(name: name, value: value))
        }
        // No 100-continue round trip unless asked for. Only a request with a body can have one: without,
        // the line would only cost libcurl a pass over its header checks (about 300 instructions).
        if !hasExpect && upload != nil { lines.append("Expect:") }
        // Sent as a ready line, not through CURLOPT_ACCEPT_ENCODING: libcurl 7.88 formats that option
        // into a line and then formats the line into the request, a byte at a time each time
        // (about 3,300 instructions per request; bench/README.md).
        if asksForEncodings { lines.append(Transfer.acceptEncodingLine) }
        return (lines, hasCookie)
    }

    /// The process's cookie storage, looked up once (its accessor is not free).
    static let cookieStorage = HTTPCookieStorage.shared

    /// Whether the process's cookie storage holds no cookie (a `DispatchQueue.sync` in corelibs:
    /// the network thread asks through `NetworkThread.cookieStorageIsEmpty`).
    static func cookieStorageIsEmpty() -> Bool {
        cookieStorage.cookies?.isEmpty ?? true
    }

    /// Header names and values may not smuggle a line break or NUL onto the wire; a name has no colon
    /// or space either.
    static func isValidHeader(name: String, value: String) -> Bool {
        !name.isEmpty
            && allBytes(of: name) { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 && $0 != 0x3A && $0 != 0x20 }
            && allBytes(of: value) { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 }
    }

    /// Whether every UTF-8 byte of `string` passes `test`, read in place where the bytes are contiguous
    /// (native and small strings): the generic `contains` on a `UTF8View` cost about 30 instructions a
    /// byte (four scans of a `Content-Type` field: about 1,600 instructions a request).
    private static func allBytes(of string: String, _ test: (UInt8) -> Bool) -> Bool {
        if let result = string.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(test) }) { return result }
        return string.utf8.allSatisfy(test)
    }

    /// Whether `name` is as long as one of the fields `headerLines` treats apart (`Range` 5, `Cookie` and
    /// `Expect` 6, `If-Range` 8, `Content-Length` 14): only those are lowered and compared.
    private static func mayNameSpecialField(_ name: String) -> Bool {
        switch name.utf8.count {
        case 5, 6, 8, 14: return true
        default: return false
        }
    }

    /// `Name: value` as curl takes it, or `Name;`, curl's spelling of a field with an empty value
    /// (`Name:` would remove it). Written into one allocation of the right size: interpolation
    /// appended twice to a growing string (about 700 instructions a field).
    private static func headerLine(name: String, value: String) -> String {
        var name = name, value = value
        let nameCount = name.utf8.count, valueCount = value.utf8.count
        let count = valueCount == 0 ? nameCount + 1 : nameCount + 2 + valueCount
        return name.withUTF8 { nameBytes in
            value.withUTF8 { valueBytes in
                String(unsafeUninitializedCapacity: count) { line in
                    _ = line.initialize(fromContentsOf: nameBytes)
                    if valueCount == 0 {
                        line[nameCount] = 0x3B   // ;
                    } else {
                        line[nameCount] = 0x3A   // :
                        line[nameCount + 1] = 0x20
                        _ = line[(nameCount + 2)...].initialize(fromContentsOf: valueBytes)
                    }
                    return count
                }
            }
        }
    }

    /// Throws the `URLError` for a setopt that libcurl refused.
    func check(_ code: CURLcode) throws {
        guard code != CURLE_OK else { return }
        throw TransportError.fromCurl(code, message: nil, url: currentRequest.url)
    }

    /// Reads curl's timing for the hop that just ended into `metrics`.
    func collectMetrics(from easy: CurlEasyHandle) {
        let shift = Double(hopStartTime &- startTime) / 1e9
        func seconds(_ item: CURLINFO) -> TimeInterval { shift + Double(easy.info(offset: item)) / 1e6 }
        let version: String?
        switch easy.info(long: CURLINFO_HTTP_VERSION) {
        case Int(CURL_HTTP_VERSION_1_0): version = "1.0"
        case Int(CURL_HTTP_VERSION_1_1): version = "1.1"
        case Int(CURL_HTTP_VERSION_2_0): version = "2"
        case Int(CURL_HTTP_VERSION_3): version = "3"
        default: version = nil
        }
        hasMetrics = true
        metrics = TransferMetrics(
            nameLookup: seconds(CURLINFO_NAMELOOKUP_TIME_T), connect: seconds(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: seconds(CURLINFO_APPCONNECT_TIME_T), firstByte: seconds(CURLINFO_STARTTRANSFER_TIME_T),
            total: Double(monotonicNow() &- startTime) / 1e9, remoteAddress: easy.primaryAddress(),
            httpVersion: version, connectionReused: easy.info(long: CURLINFO_NUM_CONNECTS) == 0,
            redirectCount: redirectCount, attempts: attempt)
    }
}

extension URLRequest {
    /// The request's method in upper case, `GET` when it has none: the form the library sends and
    /// compares (cache, retries, redirects, HEAD checks, the serializer's URI methods).
    var uppercasedMethod: String { Transfer.uppercasedMethod(httpMethod ?? "GET") }
}
