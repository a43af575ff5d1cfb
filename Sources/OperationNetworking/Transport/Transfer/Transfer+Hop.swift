import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - What one attempt and one hop own

extension Transfer {
    /// Everything one attempt (one sending of the request, with its redirects and challenge answers)
    /// owns. A retry starts from a new value (`Transfer.beginNextAttempt`): nothing of the last
    /// attempt is carried over, so no field can be forgotten in a reset.
    struct Attempt {
        /// 1 for the first attempt.
        let number: Int
        /// The request of the current hop (changes on redirects).
        var request: URLRequest
        /// The easy handle the attempt runs on while the transfer is active.
        var easy: CurlEasyHandle?
        /// The last complete response head.
        var head: ResponseHead?
        /// Response body received in memory (when the transfer has no output stream).
        var body: Data
        /// Body bytes delivered to the sink, counted across a resume.
        var bytesReceived: Int64
        /// Full length of the body being received, counting a resumed prefix; -1 when unknown.
        var expectedBodyLength: Int64 = -1
        /// Bytes of a restarted (200 instead of 206) resumed body to drop because the sink already has them.
        var bytesToSkip: Int64 = 0
        /// Resource offset of the first body byte of a 206 answering the caller's range (0 otherwise).
        var rangeBase: Int64 = 0
        /// Redirects followed so far.
        var redirectCount = 0
        /// Challenge rounds answered so far.
        var challengeRounds = 0
        /// Credentials chosen in earlier rounds for the server (dropped when a redirect leaves its
        /// origin) and for the proxy.
        var serverCredential: TransferCredential?
        var proxyCredential: TransferCredential?
        /// Set by a callback that aborted the transfer, so the outcome says why rather than curl's generic code.
        var abortError: Error?
        /// Whether `abortError` is the operation's refusal of the response, which ends the transfer
        /// as it is: no retry policy sends a request again because the caller said no.
        var abortIsFinal = false

        init(number: Int, request: URLRequest, body: Data = Data(), bytesReceived: Int64 = 0) {
            self.number = number
            self.request = request
            self.body = body
            self.bytesReceived = bytesReceived
        }
    }

    /// Everything one hop (one request and its response: the first, a redirect followed, a challenge
    /// answered, a resend) owns. Each hop starts from a new value (`Transfer.beginHop`).
    struct Hop {
        /// What the hop's response is, once its head arrived.
        enum Kind: Equatable {
            /// No final head yet (nothing, or only 1xx blocks, arrived).
            case awaitingHead
            /// The response the caller gets: its body goes to the sink.
            case delivering
            /// A 3xx the library may follow: its body is set aside in case it becomes the response.
            case redirect
            /// A 401/407 the library may answer: its body is set aside likewise.
            case challenge
            /// A status the retry policy may send again (a 503, say): its body is set aside likewise.
            case retryable
            /// A `304` the cache cannot use: the request goes again without `droppedOnResend`.
            case unusableNotModified

            /// Whether body bytes go to `setAsideBody` rather than the sink.
            var setsBodyAside: Bool { self != .awaitingHead && self != .delivering }
        }

        /// What the response is; changed only through `classify(as:)`.
        private(set) var kind: Kind = .awaitingHead
        /// The request's URL (`nil` only before the first hop) and cookie handling.
        let url: URL?
        let handlesCookies: Bool
        /// `host:port` when the hop is https (a connection that may turn out HTTP/2), else `nil`; for a
        /// hop over a Unix domain socket, prefixed with the socket (`Transfer.tlsOrigin(host:port:socket:)`).
        let tlsOrigin: String?
        /// The Unix domain socket the hop goes over, and the URL it sends there; `nil` over TCP.
        let socket: UnixSocketRoute?
        /// Whether the hop asked for compressed bodies (the request set no `Accept-Encoding` of its own).
        let asksForEncodings: Bool
        /// Monotonic time the hop began, for `metrics`.
        let startTime: UInt64
        /// Monotonic time of the last byte moved or header received; drives the no-progress timeout.
        var lastActivity: UInt64
        /// Parsing state of the header block arriving.
        var headerParser = ResponseHeaderParser()
        /// Inflates the response body when the library asked for compression and the server used an
        /// encoding it knows; `nil` otherwise (bytes pass as they come).
        var decoder: ContentDecoder?
        /// Body of a redirect or challenge candidate, kept in case it becomes the response.
        var setAsideBody = Data()
        /// The request fields the next hop goes without, after an `unusableNotModified` response.
        var droppedOnResend: [String] = []
        /// Where the body must end (in resource bytes, like `bytesReceived`), when known: a 206 that
        /// ends elsewhere would leave the download short.
        var requiredBodyEnd: Int64?
        /// The single range of the caller's own `Range` header; `nil` when it sent none, and
        /// `.unusable` when it sent one the library cannot continue (several ranges, a suffix).
        var callerRange: CallerRange?
        /// Whether the hop asked for a byte range (a resumed download).
        var sentRange = false
        /// What the proxy answered to this hop's `CONNECT`, when it refused the tunnel.
        var tunnelAnswer: TunnelAnswer?
        /// Whether the policy (a pinning one, or a subclass's `evaluateServerTrust`) decides in the
        /// pre-request callback.
        var pinsCertificates = false
        /// The trust store the TLS connection verifies against, when the policy adds anchors (held so
        /// the store outlives the handshake that uses it).
        var trustStore: TrustStore?
        /// The request body source.
        var upload: UploadSource?
        /// Upload bytes handed to curl so far.
        var bytesSent: Int64 = 0
        /// libcurl's count of request-head bytes sent when the body was last read (see
        /// `restartBodyIfRequestWasSentAgain`).
        var requestHeadBytesAtBody = 0
        /// `errno` of the last socket the open-socket callback could not make (0: none failed).
        var socketOpenError: Int32 = 0

        init(url: URL?, handlesCookies: Bool, tlsOrigin: String?, asksForEncodings: Bool, startTime: UInt64,
             socket: UnixSocketRoute? = nil) {
            self.url = url
            self.socket = socket
            self.handlesCookies = handlesCookies
            self.tlsOrigin = tlsOrigin
            self.asksForEncodings = asksForEncodings
            self.startTime = startTime
            self.lastActivity = startTime
        }

        /// The URL libcurl is given, whose host names the `Host` field and scopes cookies: the request's,
        /// or for an `http+unix` URL the `http://localhost/…` it stands for.
        var wireURL: URL? { socket?.url ?? url }

        /// The value a transfer holds before its first hop begins.
        static var beforeFirst: Hop { Hop(url: nil, handlesCookies: true, tlsOrigin: nil, asksForEncodings: false, startTime: 0) }

        /// A response header line arrived at `time`: it counts as activity, and the parser says what
        /// it completed.
        mutating func receiveHeaderLine(_ line: UnsafeRawBufferPointer, at time: UInt64) -> ResponseHeaderParser.Event {
            lastActivity = time
            return headerParser.consume(line)
        }

        /// The one place `kind` changes: a final head said what the response is, or a set-aside
        /// response became the caller's. A hop never goes back to awaiting its head.
        mutating func classify(as next: Kind) {
            precondition(next != .awaitingHead, "Transfer.Hop: \(kind) → awaitingHead")
            kind = next
        }
    }

    /// The one place a hop begins: the last hop's body source is closed and everything it owned dropped.
    func beginHop(_ next: consuming Hop) {
        assertOnItsThread()
        hop.upload?.close()
        hop = next
    }

    /// The hop for `request`. Throws unless its URL is an http or https URL with a host (or an
    /// `http+unix` or `https+unix` URL with a socket path, see `UnixSocketRoute`) and its method a token.
    func makeHop(for request: URLRequest, now: UInt64) throws -> Hop {
        guard let url = request.url else {
            throw TransportError.make(.badURL, "The request has no URL.", url: nil)
        }
        var scheme = url.scheme?.lowercased()
        // Looked at only when a socket may be named: a request over TCP pays one suffix check.
        let socket = settings.unixSocketPath != nil || scheme?.hasSuffix("+unix") == true
            ? try UnixSocketRoute.route(for: url, configured: settings.unixSocketPath) : nil
        let wireURL = socket?.url ?? url
        if socket != nil { scheme = wireURL.scheme?.lowercased() }
        guard let scheme, scheme == "http" || scheme == "https" else {
            throw TransportError.make(.unsupportedURL, "Only http and https URLs are supported.", url: url)
        }
        // As written (percent escapes kept): decoding them is the costly part of `host`, and only its
        // emptiness and the origin's spelling are needed here.
        guard let host = wireURL.host(percentEncoded: true), !host.isEmpty else {
            throw TransportError.make(.badURL, "The URL has no host.", url: url)
        }
        // The method goes to CURLOPT_CUSTOMREQUEST verbatim: anything but a token would rewrite the
        // request line (CR LF starts header lines of the caller's choosing).
        if let given = request.httpMethod, !asciiCaseInsensitiveEquals(given, "GET"), !HTTPToken.isToken(given) {
            throw LibraryError.invalidMethod(given, url: url)
        }
        return Hop(url: url, handlesCookies: request.httpShouldHandleCookies,
                   tlsOrigin: scheme == "https" ? Transfer.tlsOrigin(host: host, port: wireURL.port, socket: socket?.socketPath) : nil,
                   asksForEncodings: Transfer.offersEncodings(for: request.allHTTPHeaderFields),
                   startTime: now, socket: socket)
    }
}

// MARK: - Network thread: request → easy handle

extension Transfer {
    /// libcurl's receive buffer per easy handle: 256 KiB instead of its 16 KiB default, so a large body
    /// takes fewer socket reads. Write callbacks still come in pieces of at most 16 KiB (libcurl cuts
    /// them).
    static let receiveBufferSize = 256 * 1024

    /// Begins the next hop on `current.request` and sets up `easy` for it from its defaults. Throws a
    /// `URLError` for a request curl must not see.
    func configure(_ easy: CurlEasyHandle) throws {
        assertOnItsThread()
        let request = current.request
        beginHop(try makeHop(for: request, now: monotonicNow()))
        guard let url = hop.wireURL else { throw TransportError.make(.badURL, "The request has no URL.", url: nil) }
        let timeoutMilliseconds = max(Int(min(timeoutNanoseconds / 1_000_000, UInt64(Int32.max))), 1)
        easy.reset()
        try easy.installErrorBuffer()
        try easy.set(CURLOPT_URL, url.absoluteString)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        if let socket = hop.socket {
            // For this hop only: `easy.reset()` clears it for the next one.
            try easy.set(CURLOPT_UNIX_SOCKET_PATH, socket.socketPath)
        }
        try easy.set(CURLOPT_NOSIGNAL, true)
        try easy.set(CURLOPT_FOLLOWLOCATION, false)   // redirects are decided by the library, hop by hop
        try easy.set(CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        // Over TLS the connection may turn out HTTP/2: a burst waits for the first connection to a host
        // to say so and then shares it, instead of opening one connection per request.
        try easy.set(CURLOPT_PIPEWAIT, hop.tlsOrigin != nil)
        try configureTLS(easy, url: url)
        try configureProxy(easy)
        try configureCredentials(easy)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, timeoutMilliseconds)
        try easy.set(CURLOPT_MAXAGE_CONN, network?.idleConnectionLifetime ?? 30)
        // A request, not an order: libcurl 7.88 refuses a new size while the handle still holds a buffer
        // (after a transfer that failed, say), and reads no more than that buffer holds.
        _ = ccurl_easy_setopt_long(easy.raw, CURLOPT_BUFFERSIZE, Transfer.receiveBufferSize)
        try configureCallbacks(easy)
        let method = request.uppercasedMethod
        let body = OutgoingBody(request, method: method)
        try configureMethodAndBody(easy, method: method, body: body)
        try easy.setHeaders(headerLines(for: request, body: body, url: url).lazy.map(\.curlLine))
        if hop.asksForEncodings {
            // The header itself is one of `headerLines`; this only keeps libcurl from decoding.
            try easy.set(CURLOPT_HTTP_CONTENT_DECODING, false)
        }
        easy.owner = self
    }

    /// Every callback's data is the handle's `callbackData`, which says which transfer it serves (its
    /// `owner`, see CurlEasyHandle.swift); `configure` sets the owner last.
    private func configureCallbacks(_ easy: CurlEasyHandle) throws {
        let callbackData = easy.callbackData
        // The network thread finds the transfer of a finished handle through the same owner.
        try easy.set(CURLOPT_PRIVATE, pointer: callbackData)
        try easy.set(CURLOPT_HEADERFUNCTION) { ccurl_easy_setopt_write_function($0, CURLOPT_HEADERFUNCTION, curlHeaderCallback) }
        try easy.set(CURLOPT_HEADERDATA, pointer: callbackData)
        try easy.set(CURLOPT_WRITEFUNCTION) { ccurl_easy_setopt_write_function($0, CURLOPT_WRITEFUNCTION, curlWriteCallback) }
        try easy.set(CURLOPT_WRITEDATA, pointer: callbackData)
        try easy.set(CURLOPT_OPENSOCKETFUNCTION) { ccurl_easy_setopt_opensocket_function($0, curlOpenSocketCallback) }
        try easy.set(CURLOPT_OPENSOCKETDATA, pointer: callbackData)
        try easy.set(CURLOPT_PREREQFUNCTION) { ccurl_easy_setopt_prereq_function($0, curlPrerequestCallback) }
        try easy.set(CURLOPT_PREREQDATA, pointer: callbackData)
        if let network {
            // The connection keeps these past this transfer: the data is the thread, not the transfer.
            try easy.set(CURLOPT_CLOSESOCKETFUNCTION) { ccurl_easy_setopt_closesocket_function($0, curlCloseSocketCallback) }
            try easy.set(CURLOPT_CLOSESOCKETDATA, pointer: Unmanaged.passUnretained(network).toOpaque())
        }
    }

    /// Method and request body (`OutgoingBody`): HEAD has none, bodies are streamed by the read callback.
    private func configureMethodAndBody(_ easy: CurlEasyHandle, method: String, body: OutgoingBody) throws {
        let upload: UploadSource
        switch body {
        case .none where method == "HEAD":
            try easy.set(CURLOPT_NOBODY, true)
            return
        case .none where method == "GET":
            try easy.set(CURLOPT_HTTPGET, true)
            return
        case .none:
            try easy.set(CURLOPT_CUSTOMREQUEST, method)
            return
        case .data(let data):
            upload = UploadSource(data: data)
        case .stream(let stream, let declaredLength):
            upload = UploadSource(stream: stream, length: declaredLength)
        }
        hop.upload = upload
        try easy.set(CURLOPT_UPLOAD, true)
        try easy.set(CURLOPT_CUSTOMREQUEST, method)
        try easy.set(CURLOPT_READFUNCTION) { ccurl_easy_setopt_read_function($0, curlReadCallback) }
        try easy.set(CURLOPT_SEEKFUNCTION) { ccurl_easy_setopt_seek_function($0, curlSeekCallback) }
        try easy.set(CURLOPT_READDATA, pointer: easy.callbackData)
        try easy.set(CURLOPT_SEEKDATA, pointer: easy.callbackData)
        if let length = upload.length {
            try easy.set(CURLOPT_INFILESIZE_LARGE, offset: length)
        }
    }

    /// Reads curl's timing for the hop that just ended into `metrics`.
    func collectMetrics(from easy: CurlEasyHandle) {
        let shift = Double(hop.startTime &- startTime) / 1e9
        func seconds(_ item: CURLINFO) -> TimeInterval { shift + Double(easy.info(offset: item)) / 1e6 }
        let version: String?
        switch easy.info(long: CURLINFO_HTTP_VERSION) {
        case Int(CURL_HTTP_VERSION_1_0): version = "1.0"
        case Int(CURL_HTTP_VERSION_1_1): version = "1.1"
        case Int(CURL_HTTP_VERSION_2_0): version = "2"
        case Int(CURL_HTTP_VERSION_3): version = "3"
        default: version = nil
        }
        metrics = TransferMetrics(
            nameLookup: seconds(CURLINFO_NAMELOOKUP_TIME_T), connect: seconds(CURLINFO_CONNECT_TIME_T),
            tlsHandshake: seconds(CURLINFO_APPCONNECT_TIME_T), firstByte: seconds(CURLINFO_STARTTRANSFER_TIME_T),
            total: Double(monotonicNow() &- startTime) / 1e9, remoteAddress: easy.primaryAddress(),
            httpVersion: version, connectionReused: easy.info(long: CURLINFO_NUM_CONNECTS) == 0,
            redirectCount: current.redirectCount, attempts: attempt)
    }
}

// MARK: - Network thread: the request's header lines

extension Transfer {
    /// The hop's header lines as curl takes them (`HopHeaderLines`, the list `curlDescription` shows);
    /// reads the caller's `Range` into `hop.callerRange`. Throws `invalidHeader` for a field that would
    /// break the request's head.
    func headerLines(for request: URLRequest, body: OutgoingBody, url: URL) throws -> [HopHeaderLines.Line] {
        let headers = HopHeaderLines(request: request, body: body, offersEncodings: hop.asksForEncodings,
                                     continuation: resumeFrom, cookieURL: url,
                                     added: current.redirectCount == 0 ? conditionalFields : [])
        if let name = headers.invalidFieldName { throw LibraryError.invalidHeader(name, url: request.url ?? url) }
        hop.callerRange = headers.callerRange
        hop.sentRange = headers.sendsContinuationRange
        return headers.lines
    }
}
