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

/// Validates a response (status code, then content type) and returns its body as `Data`
/// (AFNetworking's `AFHTTPResponseSerializer`, API.md §6).
///
/// - Threading: settings are guarded by an internal lock; one serializer may serve many operations.
open class HTTPResponseSerializer: NSObject, NSCopying, @unchecked Sendable {
    /// Guards every stored `var` below.
    let lock = NSLock()
    private var storedStatusCodes: IndexSet? = IndexSet(integersIn: 200..<300)   // guarded by lock
    private var storedContentTypes: Set<String>?                                 // guarded by lock
    private var storedEncoding: String.Encoding = .utf8                          // guarded by lock

    /// A serializer accepting 2xx and any content type.
    public required override init() {
        super.init()
    }

    /// Status codes that pass validation. Default 200–299; `nil` accepts any.
    public var acceptableStatusCodes: IndexSet? {
        get { lock.withLock { storedStatusCodes } }
        set { lock.withLock { storedStatusCodes = newValue } }
    }
    /// MIME types that pass validation. Default `nil` (any).
    public var acceptableContentTypes: Set<String>? {
        get { lock.withLock { storedContentTypes } }
        set { lock.withLock { storedContentTypes = newValue } }
    }
    /// Encoding for text-based subclasses. Default UTF-8.
    public var stringEncoding: String.Encoding {
        get { lock.withLock { storedEncoding } }
        set { lock.withLock { storedEncoding = newValue } }
    }

    /// Throws an `NSError` in `ResponseSerializationErrorDomain` when the status code
    /// (`NSURLErrorBadServerResponse`) or content type (`NSURLErrorCannotDecodeContentData`) is not
    /// acceptable; a status error chains a content-type error as `NSUnderlyingErrorKey` (AFN rules).
    open func validate(_ response: HTTPURLResponse?, data: Data?) throws {
        guard let response, let url = response.url else { return }
        let (codes, types) = lock.withLock { (storedStatusCodes, storedContentTypes) }
        var failure: NSError?
        if let types, let data, !data.isEmpty {
            let mime = response.mimeType?.lowercased()
            if mime.map({ !types.contains($0) }) ?? true {
                failure = error(code: NSURLErrorCannotDecodeContentData,
                                description: "Request failed: unacceptable content-type: \(response.mimeType ?? "none")",
                                response: response, url: url, data: data, underlying: nil)
            }
        }
        if let codes, !codes.contains(response.statusCode) {
            let reason = HTTPURLResponse.localizedString(forStatusCode: response.statusCode)
            failure = error(code: NSURLErrorBadServerResponse,
                            description: "Request failed: \(reason) (\(response.statusCode))",
                            response: response, url: url, data: data, underlying: failure)
        }
        if let failure { throw failure }
    }

    /// Validates, then returns the body itself.
    open func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        try validate(response as? HTTPURLResponse, data: data)
        return try decodedObject(from: data)
    }

    /// The object for a body that passed validation (here: the data itself).
    func decodedObject(from data: Data?) throws -> Any? {
        data
    }

    /// True when `head` passes `validate` and the class is one of the library's own, whose
    /// `responseObject(for:data:)` is then exactly `decodedObject(from:)`. Subclasses outside the
    /// library always take the documented path.
    func acceptsWithoutResponseObject(_ head: ResponseHead, data: Data?) -> Bool {
        let type = Swift.type(of: self)
        guard type == HTTPResponseSerializer.self || type == JSONResponseSerializer.self else { return false }
        let (codes, types) = lock.withLock { (storedStatusCodes, storedContentTypes) }
        if let codes, !codes.contains(head.statusCode) { return false }
        if let types, let data, !data.isEmpty {
            guard let mime = head.mimeType, types.contains(mime) else { return false }
        }
        return true
    }

    /// A copy sharing no mutable state with the original.
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = type(of: self).init()
        lock.withLock {
            copy.storedStatusCodes = storedStatusCodes
            copy.storedContentTypes = storedContentTypes
            copy.storedEncoding = storedEncoding
        }
        return copy
    }

    private func error(code: Int, description: String, response: HTTPURLResponse, url: URL, data: Data?,
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
}

/// Decodes JSON bodies (`application/json`, `text/json`, `text/javascript`). An empty or single-space
/// body is `nil`, not an error. A body with an unacceptable status is still decoded: the object
/// travels in the error's `userInfo` and becomes the operation's `responseObject`.
open class JSONResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    private var storedOptions: JSONSerialization.ReadingOptions = []   // guarded by lock
    private var storedRemovesNulls = false                             // guarded by lock

    /// A JSON serializer with the JSON content types.
    public required init() {
        super.init()
        acceptableContentTypes = ["application/json", "text/json", "text/javascript"]
    }

    /// Options for `JSONSerialization`. Default none.
    public var readingOptions: JSONSerialization.ReadingOptions {
        get { lock.withLock { storedOptions } }
        set { lock.withLock { storedOptions = newValue } }
    }
    /// Removes keys whose value is `null`, recursively through arrays and dictionaries. Default `false`.
    public var removesKeysWithNullValues: Bool {
        get { lock.withLock { storedRemovesNulls } }
        set { lock.withLock { storedRemovesNulls = newValue } }
    }

    /// Validates, then decodes.
    open override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        var validationError: NSError?
        do {
            try validate(response as? HTTPURLResponse, data: data)
        } catch let error as NSError {
            if error.code == NSURLErrorCannotDecodeContentData
                || (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == NSURLErrorCannotDecodeContentData {
                throw error
            }
            validationError = error
        }
        let object: Any?
        do {
            object = try decodedObject(from: data)
        } catch {
            throw validationError ?? error
        }
        if let validationError, let object {
            var info = validationError.userInfo
            info[ResponseObjectErrorKey] = object
            throw NSError(domain: validationError.domain, code: validationError.code, userInfo: info)
        }
        if let validationError { throw validationError }
        return object
    }

    /// Decodes JSON; an empty or single-space body is `nil`.
    override func decodedObject(from data: Data?) throws -> Any? {
        guard let data, !data.isEmpty, data != Data(" ".utf8) else { return nil }
        let (options, removeNulls) = lock.withLock { (storedOptions, storedRemovesNulls) }
        let object = try JSONSerialization.jsonObject(with: data, options: options)
        return removeNulls ? JSONResponseSerializer.removingNulls(object) : object
    }

    /// A copy with the JSON settings.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        if let json = copy as? JSONResponseSerializer {
            json.readingOptions = readingOptions
            json.removesKeysWithNullValues = removesKeysWithNullValues
        }
        return copy
    }

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
