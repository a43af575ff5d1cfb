import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The error domain of response validation and serialization failures.
public let ResponseSerializationErrorDomain = "org.operationnetworking.error.serialization.response"
/// `userInfo` key of a response serialization error: the `HTTPURLResponse`.
public let FailingURLResponseErrorKey = "org.operationnetworking.serialization.response.error.response"
/// `userInfo` key of a response serialization error: the body `Data` (users need the error body).
public let FailingURLResponseDataErrorKey = "org.operationnetworking.serialization.response.error.data"
/// `userInfo` key carrying an object decoded despite a validation failure (the JSON of a 404).
let ResponseObjectErrorKey = "org.operationnetworking.serialization.response.error.object"

/// Turns a response and its body into an object.
public protocol URLResponseSerialization: NSSecureCoding, NSCopying {
    /// The object for the response, or a thrown validation or decoding error.
    func responseObject(for response: URLResponse?, data: Data?) throws -> Any?
}

/// Validates a response (status code, then content type) and returns its body as `Data`
/// (AFNetworking's `AFHTTPResponseSerializer`). Subclasses decode the body.
///
/// Subclassing: override `responseObject(for:data:)` (call `super` to validate and get the body, or
/// `validate(_:data:)` yourself), and keep `required init()` and `required init?(coder:)`; copies
/// (`copy(with:)`) and archives (`encode(with:)`) are made through them, so override those two as
/// well when the subclass adds settings.
///
/// Errors are `NSError`s in `ResponseSerializationErrorDomain` carrying the response and the body; a
/// status error chains a content-type error, and a decoding error chains the status error, through
/// `NSUnderlyingErrorKey`. When a body decodes despite a bad status (the JSON of a 404), the
/// operation's `responseObject` still holds it.
/// - Threading: the settings live behind an internal lock, which is never held while anything else
///   runs (no override, no other lock); each subclass keeps its own settings behind a lock of its own.
///   One serializer may serve many operations.
open class HTTPResponseSerializer: NSObject, URLResponseSerialization, @unchecked Sendable {
    /// The settings every response serializer has.
    private struct Settings {
        var statusCodes: IndexSet? = IndexSet(integersIn: 200..<300)
        var contentTypes: Set<String>?
        var encoding: String.Encoding = .utf8
    }

    private let settings = Protected(Settings())

    /// A serializer accepting 2xx and the class's content types (`nil`, any, for this base class).
    public required override init() {
        super.init()
        let types = Swift.type(of: self).defaultAcceptableContentTypes
        settings.withLock { $0.contentTypes = types }
    }

    /// Whether this object's class is one of the library's own serializers (see
    /// `acceptsWithoutResponseObject`).
    private var isBuiltInType: Bool {
        HTTPResponseSerializer.builtInTypes.contains(ObjectIdentifier(Swift.type(of: self)))
    }

    /// The content types a new serializer of this class accepts.
    class var defaultAcceptableContentTypes: Set<String>? { nil }

    /// Status codes that pass validation. Default 200–299; `nil` accepts any.
    public var acceptableStatusCodes: IndexSet? {
        get { settings.withLock { $0.statusCodes } }
        set { settings.withLock { $0.statusCodes = newValue } }
    }
    /// MIME types that pass validation (compared with the lower-cased media type). Default `nil` (any).
    public var acceptableContentTypes: Set<String>? {
        get { settings.withLock { $0.contentTypes } }
        set { settings.withLock { $0.contentTypes = newValue } }
    }
    /// Encoding of text bodies without a charset. Default UTF-8.
    public var stringEncoding: String.Encoding {
        get { settings.withLock { $0.encoding } }
        set { settings.withLock { $0.encoding = newValue } }
    }

    /// Throws when the content type (`NSURLErrorCannotDecodeContentData`, only for a non-empty body)
    /// or the status code (`NSURLErrorBadServerResponse`) is not acceptable (AFN 2.7's exact rules).
    open func validate(_ response: HTTPURLResponse?, data: Data?) throws {
        guard let response, let url = response.url else { return }
        let failed = failedChecks(statusCode: response.statusCode, mimeType: response.mimeType, data: data)
        var failure: NSError?
        if failed.contentType {
            failure = makeError(code: NSURLErrorCannotDecodeContentData,
                                description: "Request failed: unacceptable content-type: \(response.mimeType ?? "none")",
                                response: response, url: url, data: data, underlying: nil)
        }
        if failed.status {
            let reason = HTTPURLResponse.localizedString(forStatusCode: response.statusCode)
            failure = makeError(code: NSURLErrorBadServerResponse,
                                description: "Request failed: \(reason) (\(response.statusCode))",
                                response: response, url: url, data: data, underlying: failure)
        }
        if let failure { throw failure }
    }

    /// Which of AFN's two checks fail: the content type (only judged for a non-empty body, compared
    /// lower-cased) and the status code. Shared by `validate` and `acceptsWithoutResponseObject`.
    /// `mimeType` is only evaluated when content types are checked.
    private func failedChecks(statusCode: Int, mimeType: @autoclosure () -> String?, data: Data?) -> (contentType: Bool, status: Bool) {
        let current = settings.value
        var contentType = false
        if let types = current.contentTypes, let data, !data.isEmpty {
            contentType = mimeType().map { !types.contains($0.lowercased()) } ?? true
        }
        let status = current.statusCodes.map { !$0.contains(statusCode) } ?? false
        return (contentType, status)
    }

    /// Validates, then decodes the body (here: the body itself).
    open func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        var validationError: NSError?
        do {
            try validate(response as? HTTPURLResponse, data: data)
        } catch let error as NSError {
            validationError = error
        }
        // A decoding subclass never decodes a body of the wrong type (AFN's gate).
        if gatesOnContentType, let validationError,
           HTTPResponseSerializer.chain(validationError, contains: NSURLErrorCannotDecodeContentData) {
            throw validationError
        }
        let object: Any?
        do {
            object = try decodedObject(from: data, textEncodingName: response?.textEncodingName)
        } catch {
            let failure = HTTPResponseSerializer.addingContext(to: error as NSError, url: response?.url,
                                                               response: response, data: data)
            throw HTTPResponseSerializer.attach(failure, underlying: validationError)
        }
        guard let validationError else { return object }
        guard let object else { throw validationError }
        var info = validationError.userInfo
        info[ResponseObjectErrorKey] = object
        throw NSError(domain: validationError.domain, code: validationError.code, userInfo: info)
    }

    // MARK: - For subclasses

    /// Whether a content-type failure stops decoding (true for every decoding subclass).
    var gatesOnContentType: Bool { false }

    /// The object for a body (here: the body itself); `textEncodingName` gives the response's charset,
    /// parsed only for a serializer that reads it.
    func decodedObject(from data: Data?, textEncodingName: @autoclosure () -> String?) throws -> Any? {
        data
    }

    /// `decodedObject` for the operation's raw-head path: a decoding error carries the failing URL, the
    /// response and the body, as on the documented path.
    func decodedObject(from data: Data?, head: ResponseHead) throws -> Any? {
        do {
            return try decodedObject(from: data, textEncodingName: head.textEncodingName)
        } catch {
            throw HTTPResponseSerializer.addingContext(to: error as NSError, url: head.url, response: head.makeResponse(),
                                                       data: data)
        }
    }

    /// `error` with the failing URL, the response and the body added where it lacks them (decoding
    /// errors are made where only the body is at hand).
    static func addingContext(to error: NSError, url: URL?, response: URLResponse?, data: Data?) -> NSError {
        var info = error.userInfo
        if info[NSURLErrorFailingURLErrorKey] == nil, let url { info[NSURLErrorFailingURLErrorKey] = url }
        if info[FailingURLResponseErrorKey] == nil, let response { info[FailingURLResponseErrorKey] = response }
        if info[FailingURLResponseDataErrorKey] == nil, let data { info[FailingURLResponseDataErrorKey] = data }
        return NSError(domain: error.domain, code: error.code, userInfo: info)
    }

    /// True when `head` passes `validate` and the class is one of the library's own, whose
    /// `responseObject(for:data:)` is then exactly `decodedObject`, so the operation can skip building
    /// Foundation's `HTTPURLResponse`. Subclasses outside the library always take the documented path.
    func acceptsWithoutResponseObject(_ head: ResponseHead, data: Data?) -> Bool {
        guard isBuiltInType else { return false }
        let failed = failedChecks(statusCode: head.statusCode, mimeType: head.mimeType, data: data)
        return !failed.contentType && !failed.status
    }

    private static let builtInTypes: Set<ObjectIdentifier> = [
        ObjectIdentifier(HTTPResponseSerializer.self), ObjectIdentifier(JSONResponseSerializer.self),
        ObjectIdentifier(XMLParserResponseSerializer.self), ObjectIdentifier(XMLDocumentResponseSerializer.self),
        ObjectIdentifier(PropertyListResponseSerializer.self), ObjectIdentifier(ImageResponseSerializer.self),
    ]

    /// The error for a body that could not be decoded, with the response and body attached.
    func decodingError(_ description: String, underlying: Error? = nil) -> NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return NSError(domain: ResponseSerializationErrorDomain, code: NSURLErrorCannotDecodeContentData, userInfo: info)
    }

    // MARK: - NSCopying, NSSecureCoding

    /// A copy with every setting, sharing no mutable state with the original.
    open func copy(with zone: NSZone? = nil) -> Any {
        let current = settings.value
        // The initializer may be a subclass's: it runs with no lock held.
        let copy = Swift.type(of: self).init()
        copy.settings.withLock { $0 = current }
        return copy
    }

    /// `true`: decoding checks every class.
    public class var supportsSecureCoding: Bool { true }

    /// Archives every setting (status codes, content types, string encoding) under a version key.
    open func encode(with coder: NSCoder) {
        let current = settings.value
        coder.encode(SerializationCodingVersion, forKey: CodingKeys.version)
        coder.encodeJSON(current.statusCodes.map { Array($0) } as Any? ?? NSNull(), forKey: CodingKeys.statusCodes)
        coder.encodeJSON(current.contentTypes.map { $0.sorted() } as Any? ?? NSNull(), forKey: CodingKeys.contentTypes)
        coder.encode(Int(current.encoding.rawValue), forKey: CodingKeys.stringEncoding)
    }

    /// Restores the settings; keys missing from an older archive keep their defaults.
    public required init?(coder: NSCoder) {
        super.init()
        var decoded = Settings(contentTypes: Swift.type(of: self).defaultAcceptableContentTypes)
        coder.checkCodingVersion(of: HTTPResponseSerializer.self)
        if coder.containsValue(forKey: CodingKeys.statusCodes) {
            decoded.statusCodes = coder.decodeJSON([Int].self, forKey: CodingKeys.statusCodes)
                .map { IndexSet($0.filter { (0...999).contains($0) }) }
        }
        if coder.containsValue(forKey: CodingKeys.contentTypes) {
            decoded.contentTypes = coder.decodeJSON([String].self, forKey: CodingKeys.contentTypes).map(Set.init)
        }
        if let raw = coder.decodeCheckedInteger(forKey: CodingKeys.stringEncoding, of: HTTPResponseSerializer.self) {
            decoded.encoding = String.Encoding(rawValue: UInt(max(0, raw)))
        }
        settings.withLock { $0 = decoded }
    }

    private enum CodingKeys {
        static let version = CodingVersionKey
        static let statusCodes = "acceptableStatusCodes"
        static let contentTypes = "acceptableContentTypes"
        static let stringEncoding = "stringEncoding"
    }

    // MARK: - Errors

    private func makeError(code: Int, description: String, response: HTTPURLResponse, url: URL, data: Data?,
                           underlying: Error?) -> NSError {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey: description,
            NSURLErrorFailingURLErrorKey: url,
            FailingURLResponseErrorKey: response,
        ]
        if let data { info[FailingURLResponseDataErrorKey] = data }
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return NSError(domain: ResponseSerializationErrorDomain, code: code, userInfo: info)
    }

    /// `error` with `underlying` attached, unless `error` already has an underlying error (AFN).
    static func attach(_ error: NSError, underlying: NSError?) -> NSError {
        guard let underlying, error.userInfo[NSUnderlyingErrorKey] == nil else { return error }
        var info = error.userInfo
        info[NSUnderlyingErrorKey] = underlying
        return NSError(domain: error.domain, code: error.code, userInfo: info)
    }

    /// Whether `error` or an error under it has `code` in the response serialization domain.
    static func chain(_ error: NSError, contains code: Int) -> Bool {
        var current: NSError? = error
        while let candidate = current {
            if candidate.domain == ResponseSerializationErrorDomain && candidate.code == code { return true }
            current = candidate.userInfo[NSUnderlyingErrorKey] as? NSError
        }
        return false
    }
}

/// Written into every archive the library makes (managers, operations, serializers, policies) under
/// `CodingVersionKey`, so a later release can read older archives.
let SerializationCodingVersion = 1
/// The key of `SerializationCodingVersion` in every archive.
let CodingVersionKey = "version"

/// Decodes JSON bodies (`application/json`, `text/json`, `text/javascript`; AFNetworking's
/// `AFJSONResponseSerializer`). The body is read in the response's charset (else `stringEncoding`) and
/// parsed as UTF-8. An empty or single-space body is `nil`, not an error. Bytes that are not valid in
/// that charset are an error (AFN returned `nil` silently).
/// - Threading: as `HTTPResponseSerializer`; the JSON settings live behind a lock of their own. Any thread.
open class JSONResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    /// The JSON settings (the base class keeps its own).
    private struct Settings {
        var readingOptions: JSONSerialization.ReadingOptions = []
        var removesNulls = false
    }

    private let jsonSettings = Protected(Settings())

    /// A JSON serializer with the JSON content types.
    public required init() {
        super.init()
    }

    override class var defaultAcceptableContentTypes: Set<String>? {
        ["application/json", "text/json", "text/javascript"]
    }

    /// Options for `JSONSerialization`. Default none (`.fragmentsAllowed` for a top-level scalar).
    public var readingOptions: JSONSerialization.ReadingOptions {
        get { jsonSettings.withLock { $0.readingOptions } }
        set { jsonSettings.withLock { $0.readingOptions = newValue } }
    }
    /// Removes keys whose value is `null`, recursively through arrays and dictionaries. Default `false`.
    public var removesKeysWithNullValues: Bool {
        get { jsonSettings.withLock { $0.removesNulls } }
        set { jsonSettings.withLock { $0.removesNulls = newValue } }
    }

    override var gatesOnContentType: Bool { true }

    override func decodedObject(from data: Data?, textEncodingName: @autoclosure () -> String?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        let encoding = textEncodingName().flatMap(StringEncodingNames.encoding(forIANAName:)) ?? stringEncoding
        guard let text = String(data: data, encoding: encoding) else {
            throw decodingError("Data failed decoding as a \(encoding) string")
        }
        if text == " " { return nil }
        let utf8 = encoding == .utf8 ? data : Data(text.utf8)
        let current = jsonSettings.value
        let object = try JSONSerialization.jsonObject(with: utf8, options: current.readingOptions)
        return current.removesNulls ? JSONResponseSerializer.removingNulls(object) : object
    }

    /// A copy with every setting.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        let current = jsonSettings.value
        (copy as? JSONResponseSerializer)?.jsonSettings.withLock { $0 = current }
        return copy
    }

    /// Archives the JSON settings with the base ones.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(Int(readingOptions.rawValue), forKey: "readingOptions")
        coder.encode(removesKeysWithNullValues, forKey: "removesKeysWithNullValues")
    }

    /// Restores the JSON settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        let owner = JSONResponseSerializer.self
        let decoded = Settings(
            readingOptions: JSONSerialization.ReadingOptions(
                rawValue: UInt(max(0, coder.decodeCheckedInteger(forKey: "readingOptions", of: owner) ?? 0))),
            removesNulls: coder.decodeCheckedBool(forKey: "removesKeysWithNullValues", of: owner) ?? false)
        jsonSettings.withLock { $0 = decoded }
    }

    /// `object` without `NSNull` dictionary values, at any depth (arrays keep `NSNull` elements).
    static func removingNulls(_ object: Any) -> Any {
        if let array = object as? [Any] {
            return array.map(removingNulls)
        }
        if let dictionary = object as? [String: Any] {
            return dictionary.filter { !($0.value is NSNull) }.mapValues(removingNulls)
        }
        return object
    }
}
