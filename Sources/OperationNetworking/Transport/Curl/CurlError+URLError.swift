import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `userInfo` key of a transport error: the libcurl `CURLcode` (an `Int`) behind it, when curl reported one.
public let CurlErrorCodeKey = "OperationNetworkingCurlErrorCode"
/// `userInfo` key of a transport error: curl's message for the failure (a `String`), when curl gave one.
public let CurlErrorMessageKey = "OperationNetworkingCurlErrorMessage"

/// Builds every transport error of the library in one place: curl results become the `URLError` code a
/// Foundation user already handles, with the failing URL, the curl code and curl's message.
///
/// - Threading: pure functions; call from any thread.
enum TransportError {
    /// The `URLError` code a Foundation user already handles for a libcurl result code.
    static func urlErrorCode(for code: CURLcode) -> URLError.Code {
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL: return .unsupportedURL
        case CURLE_URL_MALFORMAT: return .badURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .cannotFindHost
        case CURLE_COULDNT_CONNECT, CURLE_PROXY: return .cannotConnectToHost
        case CURLE_OPERATION_TIMEDOUT: return .timedOut
        case CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_HTTP2_STREAM:
            return .networkConnectionLost
        case CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2, CURLE_RANGE_ERROR, CURLE_REMOTE_ACCESS_DENIED:
            return .badServerResponse
        case CURLE_TOO_MANY_REDIRECTS: return .httpTooManyRedirects
        case CURLE_ABORTED_BY_CALLBACK: return .cancelled
        case CURLE_WRITE_ERROR: return .cannotWriteToFile
        case CURLE_READ_ERROR, CURLE_SEND_FAIL_REWIND: return .requestBodyStreamExhausted
        case CURLE_BAD_CONTENT_ENCODING: return .cannotDecodeContentData
        case CURLE_FILESIZE_EXCEEDED: return .dataLengthExceedsMaximum
        case CURLE_LOGIN_DENIED: return .userAuthenticationRequired
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE:
            return .serverCertificateUntrusted
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_SHUTDOWN_FAILED,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_USE_SSL_FAILED:
            return .secureConnectionFailed
        case CURLE_SSL_CERTPROBLEM: return .clientCertificateRejected
        case CURLE_SSL_CLIENTCERT: return .clientCertificateRequired
        default: return .unknown
        }
    }

    /// A `URLError` for a curl failure, carrying the failing URL, the curl code and curl's message
    /// (when it is about this failure: see `currentMessage`).
    static func fromCurl(_ code: CURLcode, message: String?, url: URL?) -> URLError {
        let detail = currentMessage(message, for: code) ?? String(cString: curl_easy_strerror(code))
        var info: [String: Any] = [
            CurlErrorCodeKey: Int(code.rawValue),
            CurlErrorMessageKey: detail,
            NSLocalizedDescriptionKey: detail,
        ]
        addURL(url, to: &info)
        return URLError(urlErrorCode(for: code), userInfo: info)
    }

    /// curl's message when it describes the failure `code` reports, else `nil`. libcurl keeps the first
    /// message of a transfer: when a request on a reused connection fails because the server had closed
    /// it ("Send failure: Broken pipe", "Recv failure: Connection reset by peer"), libcurl sends it again
    /// on a new connection, and if that one fails too (a certificate for another host, a refused
    /// connection) the message still tells of the first, closed connection.
    static func currentMessage(_ message: String?, for code: CURLcode) -> String? {
        guard let message, !message.isEmpty else { return nil }
        if message.hasPrefix("Send failure") && code != CURLE_SEND_ERROR { return nil }
        if message.hasPrefix("Recv failure") && code != CURLE_RECV_ERROR { return nil }
        return message
    }

    /// The failure of a certificate check libcurl made (curl 60), told precisely: a certificate that
    /// names other hosts than the one asked for says so. That case is known by curl's message, or, when
    /// the message is of an earlier connection (see `currentMessage`), by the verification result:
    /// libcurl checks the host after the chain verified, and reads OpenSSL's result of the chain only
    /// once the host matched, so the result is still the "not verified" mark (1) it starts from.
    static func verificationFailure(message: String?, verifyResult: Int, url: URL?) -> URLError {
        let code = CURLE_PEER_FAILED_VERIFICATION
        let current = currentMessage(message, for: code)
        let host = url?.host ?? "the server"
        let hostMismatch = current.map { $0.contains("target host name") || $0.contains("common name") } ?? (verifyResult == 1)
        let description: String
        if hostMismatch {
            description = "The server's certificate does not match the host \(host): it was issued for other names."
        } else if let current {
            description = current
        } else {
            description = "The server's certificate could not be verified (\(String(cString: curl_easy_strerror(code))), "
                + "verification result \(verifyResult))."
        }
        return refined(.serverCertificateUntrusted, description, curl: code, message: current, url: url)
    }

    /// A `URLError` for a curl failure the library tells more precisely than curl's code and message:
    /// `code` and `description` say what happened; the curl code and curl's own message stay in `userInfo`.
    static func refined(_ code: URLError.Code, _ description: String, curl: CURLcode, message: String?, url: URL?,
                        underlying: Error? = nil) -> URLError {
        var info: [String: Any] = [
            CurlErrorCodeKey: Int(curl.rawValue),
            CurlErrorMessageKey: currentMessage(message, for: curl) ?? String(cString: curl_easy_strerror(curl)),
            NSLocalizedDescriptionKey: description,
        ]
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        addURL(url, to: &info)
        return URLError(code, userInfo: info)
    }

    /// A `URLError` raised by the library itself (no curl code behind it).
    static func make(_ code: URLError.Code, _ description: String, url: URL?, underlying: Error? = nil) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        addURL(url, to: &info)
        return URLError(code, userInfo: info)
    }

    /// `URLError(.cancelled)` with the failing URL, as AFN's cancel error carried it.
    static func cancelled(url: URL?) -> URLError {
        var info: [String: Any] = [:]
        addURL(url, to: &info)
        return URLError(.cancelled, userInfo: info)
    }

    /// `error` as the operation reports it: a `URLError` the library made without a failing URL or a
    /// description (a bare `URLError(.cannotWriteToFile)`, say) gets the operation's URL and a
    /// description here, once, so every call site need not remember them. Other errors pass unchanged.
    static func completed(_ error: Error, url: URL?) -> Error {
        guard let urlError = error as? URLError else { return error }
        var info = urlError.userInfo
        var changed = false
        if info[NSURLErrorFailingURLErrorKey] == nil, let url {
            addURL(url, to: &info)
            changed = true
        }
        if info[NSLocalizedDescriptionKey] == nil {
            info[NSLocalizedDescriptionKey] = defaultDescription(of: urlError.code)
            changed = true
        }
        return changed ? URLError(urlError.code, userInfo: info) : error
    }

    /// A description for a `URLError` code the library raises without one.
    private static func defaultDescription(of code: URLError.Code) -> String {
        switch code {
        case .cancelled: return "The operation was cancelled."
        case .cannotWriteToFile: return "The response body could not be written to the output stream."
        default: return "The request failed (NSURLErrorDomain \(code.rawValue))."
        }
    }

    private static func addURL(_ url: URL?, to info: inout [String: Any]) {
        guard let url else { return }
        info[NSURLErrorFailingURLErrorKey] = url
    }
}
