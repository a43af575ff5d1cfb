import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: request → easy handle

extension Transfer {
    /// libcurl's receive buffer per easy handle: 256 KiB instead of its 16 KiB default, so a large body
    /// takes fewer socket reads. Write callbacks still come in pieces of at most 16 KiB (libcurl cuts
    /// them).
    static let receiveBufferSize = 256 * 1024

    /// Begins the next hop on `current.request` and sets up `easy` for it from its defaults. Throws a
    /// `URLError` for a request curl must not see.
    func configure(_ easy: CurlEasyHandle) throws {
        assertOnNetworkThread()
        let request = current.request
        beginHop(try makeHop(for: request, now: monotonicNow()))
        guard let url = hop.url else { throw TransportError.make(.badURL, "The request has no URL.", url: nil) }
        let timeoutMilliseconds = max(Int(min(timeoutNanoseconds / 1_000_000, UInt64(Int32.max))), 1)
        easy.reset()
        try easy.installErrorBuffer()
        try easy.set(CURLOPT_URL, url.absoluteString)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
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
        try configureMethodAndBody(easy, method: request.uppercasedMethod, request: request)
        try easy.setHeaders(headerLines(for: request, url: url))
        if hop.asksForEncodings {
            // The header itself is one of `headerLines`; this only keeps libcurl from decoding.
            try easy.set(CURLOPT_HTTP_CONTENT_DECODING, false)
        }
        easy.owner = self
    }

    /// Every callback's data is the handle's `callbackData`, which says which transfer it serves (its
    /// `owner`, see CurlCallbacks.swift); `configure` sets the owner last.
    private func configureCallbacks(_ easy: CurlEasyHandle) throws {
        let callbackData = easy.callbackData
        // The network thread finds the transfer of a finished handle through the same owner.
        try easy.set(CURLOPT_PRIVATE, pointer: callbackData)
        try check(ccurl_easy_setopt_write_function(easy.raw, CURLOPT_HEADERFUNCTION, curlHeaderCallback))
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
    }

    /// Method and request body: HEAD has none, bodies are streamed by the read callback.
    private func configureMethodAndBody(_ easy: CurlEasyHandle, method: String, request: URLRequest) throws {
        if method == "HEAD" {
            try easy.set(CURLOPT_NOBODY, true)
            return
        }
        let upload: UploadSource
        if let data = request.httpBody {
            upload = UploadSource(data: data)
        } else if let stream = request.httpBodyStream {
            let declared = request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
            upload = UploadSource(stream: stream, length: declared)
        } else if ["POST", "PUT", "PATCH"].contains(method) {
            upload = UploadSource(data: Data())   // an explicit empty body: Content-Length: 0
        } else {
            if method == "GET" {
                try easy.set(CURLOPT_HTTPGET, true)
            } else {
                try easy.set(CURLOPT_CUSTOMREQUEST, method)
            }
            return
        }
        hop.upload = upload
        try easy.set(CURLOPT_UPLOAD, true)
        try easy.set(CURLOPT_CUSTOMREQUEST, method)
        try check(ccurl_easy_setopt_read_function(easy.raw, curlReadCallback))
        try check(ccurl_easy_setopt_seek_function(easy.raw, curlSeekCallback))
        try easy.set(CURLOPT_READDATA, pointer: easy.callbackData)
        try easy.set(CURLOPT_SEEKDATA, pointer: easy.callbackData)
        if let length = upload.length {
            try easy.set(CURLOPT_INFILESIZE_LARGE, offset: length)
        }
    }

    /// Throws the `URLError` for a setopt that libcurl refused.
    func check(_ code: CURLcode) throws {
        guard code != CURLE_OK else { return }
        throw TransportError.fromCurl(code, message: nil, url: currentRequest.url)
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
