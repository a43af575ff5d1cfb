import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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
    /// Counts the resend when it says yes.
    func resendsUnprocessed(code: CURLcode, easy: CurlEasyHandle) -> Bool {
        guard Transfer.connectionLossCodes.contains(code.rawValue),
              unprocessedResends < Transfer.maxUnprocessedResends, hop.kind == .awaitingHead,
              easy.info(long: CURLINFO_HEADER_SIZE) == 0, bodyCanBeSentAgain else { return false }
        let unsent = easy.info(long: CURLINFO_REQUEST_SIZE) == 0
        let message = easy.errorMessage
        let mayBeHTTP2 = tlsOrigin.map { network?.origins.serial.contains($0) != true } ?? false
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
