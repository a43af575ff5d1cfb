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
