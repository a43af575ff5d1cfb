import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends parameters as a JSON body (`Content-Type: application/json`) for methods that carry a body;
/// `GET`, `HEAD` and `DELETE` still put them in the query string (AFNetworking's `AFJSONRequestSerializer`).
/// Parameters that are not valid JSON throw, as do parameters nested deeper than
/// `maximumParameterNestingDepth` (`nestingTooDeep`); nothing crashes.
open class JSONRequestSerializer: HTTPRequestSerializer, @unchecked Sendable {
    private var storedWritingOptions: JSONSerialization.WritingOptions = []   // guarded by lock

    /// A serializer with compact output.
    public required init() {
        super.init()
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        storedWritingOptions = JSONSerialization.WritingOptions(
            rawValue: UInt(max(0, coder.decodeCheckedInteger(forKey: "writingOptions", of: JSONRequestSerializer.self) ?? 0)))
    }

    /// Archives the settings.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(Int(writingOptions.rawValue), forKey: "writingOptions")
    }

    /// A copy with every setting.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        (copy as? JSONRequestSerializer)?.writingOptions = writingOptions
        return copy
    }

    /// Options for `JSONSerialization`. Default none (compact).
    public var writingOptions: JSONSerialization.WritingOptions {
        get { lock.withLock { storedWritingOptions } }
        set { lock.withLock { storedWritingOptions = newValue } }
    }

    /// The request with a JSON body, or the query string for methods in the URI.
    open override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        if encodesParametersInURI(request) { return try super.request(bySerializing: request, withParameters: parameters) }
        var result = try applyingDefaultHeaders(request)
        guard let parameters else { return result }
        // Before Foundation: isValidJSONObject and the writer recurse once per level.
        try ParameterNesting.validate(parameters, url: request.url)
        let options = writingOptions
        guard JSONSerialization.isValidJSONObject(parameters) || (options.contains(.fragmentsAllowed) && isJSONScalar(parameters)) else {
            throw LibraryError.requestSerialization(.unencodableParameters, "The parameters cannot be encoded as JSON.",
                                                    url: request.url)
        }
        do {
            result.httpBody = try JSONSerialization.data(withJSONObject: parameters, options: options)
        } catch {
            throw LibraryError.requestSerialization(.unencodableParameters, "The parameters cannot be encoded as JSON.",
                                                    url: request.url, underlying: error)
        }
        if result.value(forHTTPHeaderField: "Content-Type") == nil {
            result.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        return result
    }

    private func isJSONScalar(_ value: Any) -> Bool {
        value is String || value is NSNumber || value is NSNull || value is Bool || value is Int || value is Double
    }
}

/// Sends parameters as a property list body (`Content-Type: application/x-plist`) for methods that carry
/// a body (AFNetworking's `AFPropertyListRequestSerializer`). Values a property list cannot hold throw,
/// as do parameters nested deeper than `maximumParameterNestingDepth` (`nestingTooDeep`).
open class PropertyListRequestSerializer: HTTPRequestSerializer, @unchecked Sendable {
    private var storedFormat: PropertyListSerialization.PropertyListFormat = .xml     // guarded by lock
    private var storedWriteOptions: PropertyListSerialization.WriteOptions = 0       // guarded by lock

    /// A serializer writing XML property lists.
    public required init() {
        super.init()
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        let owner = PropertyListRequestSerializer.self
        if let raw = coder.decodeCheckedInteger(forKey: "format", of: owner),
           let format = PropertyListSerialization.PropertyListFormat(rawValue: UInt(max(0, raw))) {
            storedFormat = format
        }
        storedWriteOptions = PropertyListSerialization.WriteOptions(max(0, coder.decodeCheckedInteger(forKey: "writeOptions", of: owner) ?? 0))
    }

    /// Archives the settings.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(Int(format.rawValue), forKey: "format")
        coder.encode(Int(writeOptions), forKey: "writeOptions")
    }

    /// A copy with every setting.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        if let plist = copy as? PropertyListRequestSerializer {
            plist.format = format
            plist.writeOptions = writeOptions
        }
        return copy
    }

    /// The property list format. Default `.xml`.
    public var format: PropertyListSerialization.PropertyListFormat {
        get { lock.withLock { storedFormat } }
        set { lock.withLock { storedFormat = newValue } }
    }
    /// Write options (unused by Foundation, kept for AFN parity). Default 0.
    public var writeOptions: PropertyListSerialization.WriteOptions {
        get { lock.withLock { storedWriteOptions } }
        set { lock.withLock { storedWriteOptions = newValue } }
    }

    /// The request with a property-list body, or the query string for methods in the URI.
    open override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        if encodesParametersInURI(request) { return try super.request(bySerializing: request, withParameters: parameters) }
        var result = try applyingDefaultHeaders(request)
        guard let parameters else { return result }
        // Before Foundation: the property-list writer recurses once per level.
        try ParameterNesting.validate(parameters, url: request.url)
        do {
            result.httpBody = try PropertyListSerialization.data(fromPropertyList: parameters, format: format,
                                                                 options: writeOptions)
        } catch {
            throw LibraryError.requestSerialization(.unencodableParameters, "The parameters cannot be encoded as a property list.",
                                                    url: request.url, underlying: error)
        }
        if result.value(forHTTPHeaderField: "Content-Type") == nil {
            result.setValue("application/x-plist", forHTTPHeaderField: "Content-Type")
        }
        return result
    }
}
