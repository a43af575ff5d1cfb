import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Builds requests from a request and parameters.
public protocol URLRequestSerialization: NSSecureCoding, NSCopying {
    /// A copy of `request` with the serializer's headers and `parameters` applied.
    func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest
}

/// The error domain of request serialization failures; the codes are `RequestSerializationErrorCode`.
public let RequestSerializationErrorDomain = "org.operationnetworking.error.serialization.request"

/// Builds `URLRequest`s: default headers, query strings and url-encoded form bodies
/// (AFNetworking's `AFHTTPRequestSerializer`).
///
/// Subclassing: override `request(bySerializing:withParameters:)` (call `super` for the headers and the
/// query or form), keep `required init()` and `required init?(coder:)` — `copy()` and archives create the
/// subclass through them — and override `copy(with:)` and `encode(with:)` when you add settings.
///
/// - Threading: the settings live behind an internal lock, which is never held while anything else
///   runs (no override, no query block, no other lock), so a serializer shared by a manager may be
///   read while requests are built on several threads. Each subclass keeps its own settings behind a
///   lock of its own.
open class HTTPRequestSerializer: NSObject, URLRequestSerialization, @unchecked Sendable {
    /// Builds the query string from the request and the parameters; a thrown error fails the request.
    public typealias QueryStringSerialization = @Sendable (URLRequest, Any) throws -> String

    /// How parameters become a query string.
    /// - Threading: an immutable value.
    public enum QueryStringSerializationStyle: UInt, Sendable {
        /// AFN 2.7's query string, byte for byte: `key[]=` / `key[sub]=` flattening with percent-encoded
        /// brackets, sorted keys, `/` and `?` left alone in values, UTF-8 always. Numbers are written as
        /// AFN's `NSNumber` wrote them, whatever Swift type they arrive in: `["count": 3, "ratio": 1.5]`
        /// (a `[String: Double]` to Swift) sends `count=3&ratio=1.5`; integral doubles have no `.0`
        /// (`%.16g`, floats `%.7g`), `Bool`s are `1`/`0`, integers are exact (`UInt64.max` too). NaN and
        /// infinities throw `unencodableParameters` instead of sending `nan`.
        case `default` = 0
    }

    /// The settings every request serializer has.
    struct Settings {
        var headers: [String: String] = [:]
        /// The request settings the caller set, by their `CodingKeys` name (unset ones are not applied).
        var changed: [String: Any] = [:]
        var customQuery: QueryStringSerialization?
        var style: QueryStringSerializationStyle = .default
        var methodsInURI: Set<String> = ["GET", "HEAD", "DELETE"]
        var encoding: String.Encoding = .utf8
    }

    let settings = Protected(Settings())

    /// The deepest nesting of arrays, dictionaries and sets the library's encodings accept in
    /// parameters: 256 (the top-level container is level 1). Deeper parameters fail with
    /// `RequestSerializationErrorCode.nestingTooDeep` — in the query string, the form body, multipart
    /// fields, JSON and property lists alike — instead of overflowing the stack of the encoders, which
    /// recurse once per level. 256 is below the 512 levels Foundation's JSON and property-list readers
    /// accept, and Foundation's JSON and property-list writers need about 1.5 KiB of stack per level,
    /// so even a thread with a 512 KiB stack can encode the deepest accepted parameters.
    public static let maximumParameterNestingDepth = 256

    /// A serializer with AFN's default headers: `Accept-Language` (the preferred languages with AFN's
    /// q-values, 1 then 0.9, 0.8… down to 0.5) and `User-Agent`, which AFN left out on Linux:
    /// `<process name> (<OS> <kernel release>; <machine>) OperationNetworking/<version> libcurl/<version>`.
    public required override init() {
        super.init()
        let defaults = [
            "Accept-Language": HTTPRequestSerializer.defaultAcceptLanguage(),
            "User-Agent": HTTPRequestSerializer.defaultUserAgent(),
        ]
        settings.withLock { $0.headers = defaults }
    }

    /// A copy with every setting, sharing no mutable state with the original.
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = type(of: self).init()
        copySettings(into: copy)
        return copy
    }

    /// `true`: decoding checks every class.
    public class var supportsSecureCoding: Bool { true }

    /// Archives headers, query style, encoding, methods in the URI and every request setting that was
    /// set. A custom query-string block is not archived (a block cannot be).
    open func encode(with coder: NSCoder) {
        encodeSettings(with: coder)
    }

    /// Restores an archived serializer; missing keys keep their defaults.
    public required init?(coder: NSCoder) {
        super.init()
        decodeSettings(from: coder)
    }

    // MARK: - Settings

    /// Encoding of form bodies. Default UTF-8 (percent-escaping is always UTF-8, as AFN 2.6+).
    public var stringEncoding: String.Encoding {
        get { settings.withLock { $0.encoding } }
        set { settings.withLock { $0.encoding = newValue } }
    }
    /// Applied to each request only when set. Default (as `URLRequest`): 60.
    public var timeoutInterval: TimeInterval {
        get { setting(CodingKeys.timeout, 60.0) }
        set { settings.withLock { $0.changed[CodingKeys.timeout] = newValue } }
    }
    /// Applied to each request only when set. Default `.useProtocolCachePolicy`.
    public var cachePolicy: URLRequest.CachePolicy {
        get { setting(CodingKeys.cachePolicy, URLRequest.CachePolicy.useProtocolCachePolicy) }
        set { settings.withLock { $0.changed[CodingKeys.cachePolicy] = newValue } }
    }
    /// Applied to each request only when set. Default `true`.
    public var httpShouldHandleCookies: Bool {
        get { setting(CodingKeys.cookies, true) }
        set { settings.withLock { $0.changed[CodingKeys.cookies] = newValue } }
    }
    /// Kept for AFN compatibility; has no effect: curl never pipelines HTTP/1.1 and multiplexes HTTP/2.
    /// Default `false`.
    public var httpShouldUsePipelining: Bool {
        get { setting(CodingKeys.pipelining, false) }
        set { settings.withLock { $0.changed[CodingKeys.pipelining] = newValue } }
    }
    /// Applied to each request only when set. Default `true`.
    public var allowsCellularAccess: Bool {
        get { setting(CodingKeys.cellular, true) }
        set { settings.withLock { $0.changed[CodingKeys.cellular] = newValue } }
    }
    /// Applied to each request only when set. Default `.default`.
    public var networkServiceType: URLRequest.NetworkServiceType {
        get { setting(CodingKeys.serviceType, URLRequest.NetworkServiceType.default) }
        set { settings.withLock { $0.changed[CodingKeys.serviceType] = newValue } }
    }
    /// Methods whose parameters go in the query string. Default `GET`, `HEAD`, `DELETE`.
    public var httpMethodsEncodingParametersInURI: Set<String> {
        get { settings.withLock { $0.methodsInURI } }
        set { settings.withLock { $0.methodsInURI = newValue } }
    }
    /// The query string style; setting it removes a custom query block.
    public var queryStringSerializationStyle: QueryStringSerializationStyle {
        get { settings.withLock { $0.style } }
        set {
            let replaced = settings.withLock { current in
                let old = current.customQuery
                current.style = newValue
                current.customQuery = nil
                return old
            }
            // The removed block (and what it captured) is released with no lock held.
            withExtendedLifetime(replaced) {}
        }
    }
    /// Replaces the query string encoding (`nil` restores the default style).
    @preconcurrency
    public func setQueryStringSerialization(_ block: QueryStringSerialization?) {
        let replaced = settings.withLock { current in
            let old = current.customQuery
            current.customQuery = block
            return old
        }
        // The replaced block (and what it captured) is released with no lock held.
        withExtendedLifetime(replaced) {}
    }

    // MARK: - Headers

    /// The headers added to every request that does not set them itself.
    public var httpRequestHeaders: [String: String] { settings.withLock { $0.headers } }
    /// Sets (or with `nil` removes) a default header. Does not throw; a value with CR, LF or NUL makes
    /// every request-building call throw until it is replaced.
    public func setValue(_ value: String?, forHTTPHeaderField field: String) {
        settings.withLock { $0.headers[field] = value }
    }
    /// A default header's value.
    public func value(forHTTPHeaderField field: String) -> String? {
        settings.withLock { $0.headers[field] }
    }
    /// Sets `Authorization: Basic base64(username:password)`.
    public func setAuthorizationHeaderField(username: String, password: String) {
        let token = Data("\(username):\(password)".utf8).base64EncodedString()
        setValue("Basic \(token)", forHTTPHeaderField: "Authorization")
    }
    /// Removes the `Authorization` default header.
    public func clearAuthorizationHeader() {
        setValue(nil, forHTTPHeaderField: "Authorization")
    }

    // MARK: - Building requests

    /// A request for `method` and `urlString` with `parameters` in the query or body.
    /// Throws `URLError(.badURL)` for a string that is not an absolute URL, and the errors of
    /// `request(bySerializing:withParameters:)`.
    open func request(method: String, urlString: String, parameters: Any?) throws -> URLRequest {
        guard let url = URL(string: urlString), url.scheme != nil else {
            throw LibraryError.badURL(urlString)
        }
        var request = URLRequest(url: url)
        request.httpMethod = method
        let changed = settings.withLock { $0.changed }
        if let value = changed[CodingKeys.timeout] as? TimeInterval { request.timeoutInterval = value }
        if let value = changed[CodingKeys.cachePolicy] as? URLRequest.CachePolicy { request.cachePolicy = value }
        if let value = changed[CodingKeys.cookies] as? Bool { request.httpShouldHandleCookies = value }
        if let value = changed[CodingKeys.cellular] as? Bool { request.allowsCellularAccess = value }
        if let value = changed[CodingKeys.serviceType] as? URLRequest.NetworkServiceType {
            request.networkServiceType = value
        }
        return try self.request(bySerializing: request, withParameters: parameters)
    }

    /// `request` with the default headers merged in (the request's own values win). Throws when a
    /// header would carry CR, LF or NUL.
    func applyingDefaultHeaders(_ request: URLRequest) throws -> URLRequest {
        var result = request
        let headers = settings.withLock { $0.headers }
        // Checked here, before Foundation's URLRequest silently drops such a value.
        try HTTPRequestSerializer.validate(headers, url: request.url)
        for (field, value) in headers where result.value(forHTTPHeaderField: field) == nil {
            result.setValue(value, forHTTPHeaderField: field)
        }
        try HTTPRequestSerializer.validateHeaders(of: result)
        return result
    }

    /// Whether `request`'s method puts parameters in the query string.
    func encodesParametersInURI(_ request: URLRequest) -> Bool {
        settings.withLock { $0.methodsInURI }.contains(request.uppercasedMethod)
    }

    /// A copy of `request` with the default headers and `parameters` applied. Throws `nestingTooDeep`
    /// for parameters nested deeper than `maximumParameterNestingDepth` (a custom query-string block
    /// gets the parameters unchecked: its recursion, if any, is its own).
    open func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        var result = try applyingDefaultHeaders(request)
        let current = settings.value
        var query: String?
        if let parameters {
            // The custom block is the caller's: it runs with no lock held.
            query = try current.customQuery.map { try $0(result, parameters) }
                ?? QueryString.encode(parameters, url: result.url)
        }
        if current.methodsInURI.contains(result.uppercasedMethod) {
            if let query, let url = result.url {
                let separator = url.query == nil ? "?" : "&"
                let text = url.absoluteString + separator + query
                // A custom query block can return text no URL holds; never send the request without a URL.
                guard let withQuery = URL(string: text) else { throw LibraryError.badURL(text) }
                result.url = withQuery
            }
        } else {
            if result.value(forHTTPHeaderField: "Content-Type") == nil {
                result.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
            }
            result.httpBody = (query ?? "").data(using: current.encoding) ?? Data((query ?? "").utf8)
        }
        return result
    }

    /// Throws `invalidHeader` when a header name or value contains CR, LF or NUL (no header injection).
    static func validateHeaders(of request: URLRequest) throws {
        try validate(request.allHTTPHeaderFields ?? [:], url: request.url)
    }

    private static func validate(_ headers: [String: String], url: URL?) throws {
        for (name, value) in headers where !Transfer.isValidHeader(name: name, value: value) {
            throw LibraryError.invalidHeader(name, url: url)
        }
    }

    private func setting<T>(_ key: String, _ fallback: T) -> T {
        settings.withLock { $0.changed[key] as? T } ?? fallback
    }

    // MARK: - Defaults

    /// AFN's formula: the process's preferred languages with q = 1.0, 0.9, … down to 0.5.
    static func defaultAcceptLanguage() -> String {
        var languages = Locale.preferredLanguages
        if languages.isEmpty { languages = [Locale.current.identifier.replacingOccurrences(of: "_", with: "-")] }
        var parts: [String] = []
        for (index, language) in languages.enumerated() {
            let q = 1.0 - 0.1 * Double(index)
            parts.append("\(language);q=\(q == 1 ? "1" : String(format: "%.1f", q))")
            if q <= 0.5 { break }
        }
        return parts.joined(separator: ", ")
    }

    /// "<process> (<OS> <kernel release>; <machine>) OperationNetworking/<version> libcurl/<version>".
    static func defaultUserAgent() -> String {
        var names = utsname()
        uname(&names)
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        let curlVersion = curl_version_info(CURLVERSION_ELEVENTH).flatMap { $0.pointee.version }
            .map { String(cString: $0) } ?? "unknown"
        let agent = "\(ProcessInfo.processInfo.processName) (\(field(names.sysname)) \(field(names.release)); "
            + "\(field(names.machine))) OperationNetworking/\(OperationNetworkingVersion) libcurl/\(curlVersion)"
        return String(agent.unicodeScalars.filter { $0.isASCII && $0.value >= 0x20 })
    }
}

/// The library's version, as sent in the default `User-Agent`.
let OperationNetworkingVersion = "0.1.0"
