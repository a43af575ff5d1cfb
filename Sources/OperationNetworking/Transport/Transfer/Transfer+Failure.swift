import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: what a failed hop says

extension Transfer {
    /// curl's failure as the `URLError` that says what happened. curl's codes are refined where the
    /// hop tells more than the code: before a complete head, an unsupported protocol (curl's word for
    /// an HTTP/0.9 reply or a garbage status line) is a bad server response, and running out of memory
    /// (its word for a header line past its 100 KB limit) an unparseable one; broken chunked framing is
    /// unparseable, not a lost connection (which callers retry). An exhausted descriptor table says so,
    /// and a certificate for another host (`TransportError.verificationFailure`). A message libcurl kept
    /// from a reused connection it replaced is not this failure's (`TransportError.currentMessage`).
    func failure(_ code: CURLcode, easy: CurlEasyHandle) -> URLError {
        let message = TransportError.currentMessage(easy.errorMessage, for: code)
        let url = currentRequest.url
        if code == CURLE_PEER_FAILED_VERIFICATION {
            return TransportError.verificationFailure(message: message, verifyResult: easy.info(long: CURLINFO_SSL_VERIFYRESULT),
                                                      url: url)
        }
        let curlSays = message ?? String(cString: curl_easy_strerror(code))
        var refined: (code: URLError.Code, description: String)?
        if hop.kind == .awaitingHead && code == CURLE_UNSUPPORTED_PROTOCOL {
            refined = (.badServerResponse, "The server's reply is not an HTTP response (\(curlSays)).")
        } else if hop.kind == .awaitingHead && code == CURLE_OUT_OF_MEMORY {
            refined = (.cannotParseResponse, "A response header line is longer than libcurl accepts (100 KB).")
        } else if code == CURLE_RECV_ERROR, message?.lowercased().contains("chunked") == true {
            refined = (.cannotParseResponse, "The response's chunked framing is broken (\(curlSays)).")
        } else if let socket = hop.socket, code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST {
            // curl names the URL's host and port, which say nothing of a socket (its word for a path too
            // long for a socket address is a name it could not resolve).
            refined = (.cannotConnectToHost, Transfer.unixSocketFailure(socket.socketPath,
                                                                        errno: Int32(clamping: easy.info(long: CURLINFO_OS_ERRNO))))
        }
        let osError = hop.socketOpenError != 0 ? hop.socketOpenError : Int32(clamping: easy.info(long: CURLINFO_OS_ERRNO))
        if osError == EMFILE || osError == ENFILE {
            let name = osError == EMFILE ? "EMFILE" : "ENFILE"
            return TransportError.refined(
                refined?.code ?? TransportError.urlErrorCode(for: code),
                "\(refined?.description ?? curlSays) (\(name): the process has no file descriptors left)",
                curl: code, message: message, url: url, underlying: NSError(domain: NSPOSIXErrorDomain, code: Int(osError)))
        }
        guard let refined else { return TransportError.fromCurl(code, message: message, url: url) }
        return TransportError.refined(refined.code, refined.description, curl: code, message: message, url: url)
    }

    /// Why a connection to the Unix domain socket at `path` failed, for the error's description.
    static func unixSocketFailure(_ path: String, errno: Int32) -> String {
        let reason = errno != 0 ? String(cString: strerror(errno)) : "no connection could be made"
        return "Could not connect to the Unix domain socket \(path): \(reason)."
    }

    /// A body that ended before its `Content-Length` — one libcurl let pass because the number did
    /// not fit its integer (`Content-Length: 99999999999999999999999` and five bytes, then a close).
    func bodyShortfall(_ easy: CurlEasyHandle) -> URLError? {
        // One look at the head (each optional-chained read copied it). The length parsed with the
        // head settles the usual case, a body that arrived whole, before the digits are read again.
        guard let head, head.statusCode != 204, head.statusCode != 304 else { return nil }
        let received = easy.info(offset: CURLINFO_SIZE_DOWNLOAD_T)
        guard head.expectedContentLength < 0 || received < head.expectedContentLength,
              let declared = head.declaredContentLength, received < declared,
              currentRequest.uppercasedMethod != "HEAD" else { return nil }
        return TransportError.make(.networkConnectionLost,
                                   "The server announced \(declared == .max ? "more than \(Int64.max)" : String(declared)) "
                                   + "body bytes and closed after \(received).", url: currentRequest.url)
    }

    /// A compressed body whose stream never reached its end: every announced byte may have arrived,
    /// yet the body is cut (libcurl 7.88 does not check this itself).
    func unfinishedCompression() -> URLError? {
        guard let decoder = hop.decoder, !decoder.isComplete else { return nil }
        return TransportError.make(.cannotDecodeContentData, "The compressed response body ended before its end.",
                                   url: currentRequest.url)
    }
}

// MARK: - Network thread: sending again a request its server never processed

extension Transfer {
    /// How many times one transfer's hops are sent again, at most, because their server never
    /// processed them. Each resend starts libcurl's own count of resends (up to 5) over.
    static let maxUnprocessedResends = 5

    /// How libcurl 7.88's message begins when its own resends of a request ran out. It resends a request
    /// only when nothing of a response arrived and either an HTTP/2 server refused the stream
    /// (RST_STREAM with REFUSED_STREAM, or a stream above a GOAWAY's last-stream-id, which nghttp2
    /// closes as refused) or the request went out on a reused connection that then died. Its error
    /// buffer keeps the first message of a hop, so any failure it reported on the way (a reset
    /// connection, a broken pipe) hides this one.
    private static let curlResendsRanOut = "Connection died, tried"

    /// The failures of a connection or of its HTTP/2 session: sending or receiving failed, the session
    /// ended (libcurl's "Error in the HTTP2 framing layer" also covers a stream a GOAWAY refused) or
    /// the stream was reset (a partial file, when nothing of a response arrived).
    private static let connectionLossCodes: Set<UInt32> = [
        CURLE_SEND_ERROR.rawValue, CURLE_RECV_ERROR.rawValue, CURLE_HTTP2.rawValue, CURLE_HTTP2_STREAM.rawValue,
        CURLE_PARTIAL_FILE.rawValue,
    ]

    /// The methods RFC 9110 (§9.2.2) calls idempotent: a client may send them again on its own.
    private static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]

    /// Whether the hop that failed with `code` (the connection or its HTTP/2 session failed) is sent
    /// again at once, on a connection chosen as for a first send, whatever the retry policy (up to `maxUnprocessedResends`
    /// times a transfer): only when its server never processed it, or for an idempotent method may
    /// not have. Not one response byte arrived (no status line, not even a 1xx), its body can be sent
    /// again, and one of these holds:
    /// - not one byte of the request reached a connection (`CURLINFO_REQUEST_SIZE` 0: an HTTP/2 session
    ///   ended by a GOAWAY before the stream could start, say), so any method is sent again;
    /// - libcurl's own resends ran out on an origin that may speak HTTP/2: every try was a refused
    ///   stream, which RFC 9113 (§8.7) guarantees was not processed, so any method is sent again;
    /// - the HTTP/2 session ended with the stream unanswered: libcurl's bare "Error in the HTTP2
    ///   framing layer" (no message of its own), which is how it reports a stream refused by a GOAWAY
    ///   when no other stream is left on the connection; any method is sent again (the one other way
    ///   to it is a server that broke the protocol on that connection after its GOAWAY, which libcurl
    ///   does not let a client tell apart);
    /// - the hop made no connection of its own: every try went out on a kept-alive connection that
    ///   closed before answering — the stale keep-alive race of HTTP/1.x among others. That is no
    ///   proof the request was not processed, so only an idempotent method (RFC 9110 §9.2.2) is sent
    ///   again. An HTTP/2 stream its server reset is not such a loss: the server had the request, and
    ///   only REFUSED_STREAM (resent by libcurl itself, then the rule above) says it did not process
    ///   it (RFC 9113 §8.7), so a reset with any other code (libcurl's stream error; or a bare partial
    ///   file, how it reports a reset stream that was the last on a connection a GOAWAY ended,
    ///   whatever the code) is sent again only if the retry policy says so.
    /// Counts the resend when it says yes. `http1Origins`: the https origins known to speak HTTP/1.x.
    func resendsUnprocessed(code: CURLcode, easy: CurlEasyHandle, http1Origins: Set<String>) -> Bool {
        guard Transfer.connectionLossCodes.contains(code.rawValue),
              unprocessedResends < Transfer.maxUnprocessedResends, hop.kind == .awaitingHead,
              easy.info(long: CURLINFO_HEADER_SIZE) == 0, bodyCanBeSentAgain else { return false }
        let unsent = easy.info(long: CURLINFO_REQUEST_SIZE) == 0
        let message = easy.errorMessage
        let mayBeHTTP2 = tlsOrigin.map { !http1Origins.contains($0) } ?? false
        let refused = mayBeHTTP2 && (message?.hasPrefix(Transfer.curlResendsRanOut) == true
                                     || code == CURLE_HTTP2 && message == nil)
        let streamReset = code == CURLE_HTTP2_STREAM || code == CURLE_PARTIAL_FILE
        let stale = !streamReset && easy.info(long: CURLINFO_NUM_CONNECTS) == 0
            && Transfer.idempotentMethods.contains(currentRequest.uppercasedMethod)
        guard unsent || refused || stale else { return false }
        unprocessedResends += 1
        if let multipart = currentRequest.httpBodyStream as? MultipartBodyStream, let fresh = multipart.rebuilt() {
            current.request.httpBodyStream = fresh
        }
        return true
    }

    /// Whether the current hop's body can go out again from its first byte: none, bytes in memory, or
    /// a multipart body the serializer can build again (never a caller's own stream).
    private var bodyCanBeSentAgain: Bool {
        guard let stream = currentRequest.httpBodyStream else { return true }
        return (stream as? MultipartBodyStream)?.canBeRebuilt ?? false
    }
}

// MARK: - Network thread: the request body sent again after a redirect or a challenge

extension Transfer {
    /// `next` (the request a redirect that keeps the body, or an answered challenge, sends) with a
    /// body that goes out from its first byte: data is read again from memory, a multipart body the
    /// serializer built from data and files is built again, and a stream of the caller's that was
    /// already read is replaced by the delegate's (the operation's `needNewBodyStream` block). `nil`
    /// when no new body can be had. Asked after the redirect or challenge block decided, so a block
    /// that drops the body or sets a stream of its own is never second-guessed.
    func withFreshBody(_ next: URLRequest) -> URLRequest? {
        guard let stream = next.httpBodyStream, next.uppercasedMethod != "HEAD" else { return next }
        // A stream other than the one this hop read (the redirect block's own), or one it never
        // opened (the answer came before any body byte was read), goes out as it is.
        guard stream === currentRequest.httpBodyStream, hop.upload?.isUnread != true else { return next }
        var fresh = next
        if let multipart = stream as? MultipartBodyStream, let rebuilt = multipart.rebuilt() {
            fresh.httpBodyStream = rebuilt
        } else if let given = delegate?.transfer(self, needsNewBodyStreamFor: next) {
            fresh.httpBodyStream = given
        } else {
            return nil
        }
        return fresh
    }

    /// The failure of a redirect or challenge whose body could not be had again.
    func bodyStreamExhausted(_ status: Int) -> Error {
        TransportError.make(.requestBodyStreamExhausted,
                            "A \(status) needs the request body again, but it was a stream that could not be "
                            + "made again (see setNeedNewBodyStreamBlock).", url: currentRequest.url)
    }
}
