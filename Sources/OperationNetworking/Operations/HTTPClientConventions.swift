import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What one operation was, in OpenTelemetry's HTTP client conventions: the facts `MetricsEventMonitor`
/// records as dimensions and a traced operation's span carries as attributes. Every value is of low
/// cardinality (a method, a host, a port, a status, a version, an error's name): a path, a query, a
/// header value or an error's description never becomes one.
/// - Threading: a value; built from an operation's public state, on any thread.
struct HTTPClientFacts: Sendable {
    /// The attribute and dimension names (OpenTelemetry's, and the library's own for the cache).
    enum Name {
        static let method = "http.request.method"
        static let statusCode = "http.response.status_code"
        static let serverAddress = "server.address"
        static let serverPort = "server.port"
        static let protocolVersion = "network.protocol.version"
        static let scheme = "url.scheme"
        static let errorType = "error.type"
        static let cacheStatus = "onet.cache.status"
        static let fullURL = "url.full"
        static let resendCount = "http.request.resend_count"
    }

    /// The methods named as they are; any other is `_OTHER` (a method is whatever a caller writes).
    private static let knownMethods: Set<String> = ["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST",
                                                     "PUT", "QUERY", "TRACE"]

    // Known before the request goes out.
    let method: String
    let serverAddress: String?
    let serverPort: Int?
    let scheme: String?

    // Known once the operation finished (`finished(_:)`).
    private(set) var statusCode: Int?
    private(set) var protocolVersion: String?
    private(set) var errorType: String?
    private(set) var cacheStatus: CacheStatus = .notConsulted
    /// Requests sent again, by the retry policy or to follow a redirect.
    private(set) var resendCount = 0
    /// The request body's length, when it is known before it is sent (`nil` for a stream of unknown length).
    private(set) var requestBodySize: Int64?
    /// Response body bytes delivered (after content decoding); `nil` when no response arrived.
    private(set) var responseBodySize: Int64?

    /// The facts `request` gives before it is sent.
    init(request: URLRequest) {
        let method = request.uppercasedMethod
        self.method = HTTPClientFacts.knownMethods.contains(method) ? method : "_OTHER"
        let url = request.url
        let scheme = url?.scheme?.lowercased()
        self.scheme = scheme
        serverAddress = url?.host?.lowercased()
        serverPort = url?.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
    }

    /// The facts once `operation` finished (read its `response`, `error`, `metrics` and counts).
    static func finished(_ operation: URLConnectionOperation) -> HTTPClientFacts {
        let request = operation.request
        var facts = HTTPClientFacts(request: request)
        let head = operation.responseHead
        let metrics = operation.metrics
        facts.statusCode = head?.statusCode
        facts.protocolVersion = metrics?.httpVersion
        facts.cacheStatus = metrics?.cacheStatus ?? .notConsulted
        facts.resendCount = max(0, operation.attempts - 1) + (metrics?.redirectCount ?? 0)
        if operation.startedAt != nil, request.uppercasedMethod != "HEAD" {
            facts.requestBodySize = request.httpBody.map { Int64($0.count) }
                ?? request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
                ?? (request.httpBodyStream == nil ? 0 : nil)
        }
        if head != nil { facts.responseBodySize = operation.responseData.map { Int64($0.count) } ?? operation.bodyBytesDelivered }
        facts.errorType = HTTPClientFacts.errorType(of: operation.error, status: facts.statusCode)
        return facts
    }

    /// Whether the operation failed in OpenTelemetry's sense: an error, or a status of 400 or more.
    var failed: Bool { errorType != nil }

    /// The dimensions of a finished operation, in a fixed order; the ones not known are left out.
    var dimensions: [(String, String)] {
        var dimensions = startDimensions
        dimensions.insert((Name.method, method), at: 0)
        if let statusCode { dimensions.append((Name.statusCode, String(statusCode))) }
        if let protocolVersion { dimensions.append((Name.protocolVersion, protocolVersion)) }
        if let errorType { dimensions.append((Name.errorType, errorType)) }
        dimensions.append((Name.cacheStatus, cacheStatus.rawValue))
        return dimensions
    }

    /// The dimensions known before the request goes out, the method aside (`http.client.active_requests`
    /// is counted per server, as OpenTelemetry's conventions count it).
    var startDimensions: [(String, String)] {
        var dimensions: [(String, String)] = []
        if let serverAddress { dimensions.append((Name.serverAddress, serverAddress)) }
        if let serverPort { dimensions.append((Name.serverPort, String(serverPort))) }
        if let scheme { dimensions.append((Name.scheme, scheme)) }
        return dimensions
    }

    /// `error.type`: the name of a `URLError`'s code (`cannotConnectToHost`), else the status of a
    /// response of 400 or more (`"404"`), else the error's domain; `nil` for a success.
    static func errorType(of error: Error?, status: Int?) -> String? {
        if let error = error as? URLError { return name(of: error.code) }
        if let status, status >= 400 { return String(status) }
        guard let error else { return nil }
        return (error as NSError).domain
    }

    /// The name of a `URLError` code as Foundation spells the case; `URLError.<number>` for the rest.
    static func name(of code: URLError.Code) -> String {
        switch code {
        case .cancelled: return "cancelled"
        case .timedOut: return "timedOut"
        case .cannotConnectToHost: return "cannotConnectToHost"
        case .cannotFindHost: return "cannotFindHost"
        case .dnsLookupFailed: return "dnsLookupFailed"
        case .networkConnectionLost: return "networkConnectionLost"
        case .notConnectedToInternet: return "notConnectedToInternet"
        case .badURL: return "badURL"
        case .unsupportedURL: return "unsupportedURL"
        case .badServerResponse: return "badServerResponse"
        case .cannotParseResponse: return "cannotParseResponse"
        case .cannotDecodeRawData: return "cannotDecodeRawData"
        case .cannotDecodeContentData: return "cannotDecodeContentData"
        case .zeroByteResource: return "zeroByteResource"
        case .dataLengthExceedsMaximum: return "dataLengthExceedsMaximum"
        case .httpTooManyRedirects: return "httpTooManyRedirects"
        case .redirectToNonExistentLocation: return "redirectToNonExistentLocation"
        case .userAuthenticationRequired: return "userAuthenticationRequired"
        case .userCancelledAuthentication: return "userCancelledAuthentication"
        case .resourceUnavailable: return "resourceUnavailable"
        case .cannotWriteToFile: return "cannotWriteToFile"
        case .requestBodyStreamExhausted: return "requestBodyStreamExhausted"
        case .secureConnectionFailed: return "secureConnectionFailed"
        case .serverCertificateUntrusted: return "serverCertificateUntrusted"
        case .serverCertificateHasBadDate: return "serverCertificateHasBadDate"
        case .serverCertificateNotYetValid: return "serverCertificateNotYetValid"
        case .serverCertificateHasUnknownRoot: return "serverCertificateHasUnknownRoot"
        case .clientCertificateRejected: return "clientCertificateRejected"
        case .clientCertificateRequired: return "clientCertificateRequired"
        case .cannotLoadFromNetwork: return "cannotLoadFromNetwork"
        default: return "URLError.\(code.rawValue)"
        }
    }
}
