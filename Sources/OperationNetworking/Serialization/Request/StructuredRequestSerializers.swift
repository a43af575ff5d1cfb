import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends parameters as a JSON body (`Content-Type: application/json`) for methods that carry a body;
/// `GET`, `HEAD` and `DELETE` still put them in the query string (AFNetworking's `AFJSONRequestSerializer`).
/// Parameters that are not valid JSON throw, as do parameters nested deeper than
/// `maximumParameterNestingDepth` (`nestingTooDeep`); nothing crashes.
/// - Threading: as `HTTPRequestSerializer`; `writingOptions` live behind a lock of their own. Any thread.
open class JSONRequestSerializer: HTTPRequestSerializer, @unchecked Sendable {
    private let storedWritingOptions = Protected<JSONSerialization.WritingOptions>([])

    /// A serializer with compact output.
    public required init() {
        super.init()
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        let decoded = JSONSerialization.WritingOptions(
            rawValue: UInt(max(0, coder.decodeCheckedInteger(forKey: "writingOptions", of: JSONRequestSerializer.self) ?? 0)))
        storedWritingOptions.withLock { $0 = decoded }
    }

    /// Archives the settings.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(Int(writingOptions.rawValue), forKey: "writingOptions")
    }

    /// A copy with every setting.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        let options = storedWritingOptions.value
        (copy as? JSONRequestSerializer)?.storedWritingOptions.withLock { $0 = options }
        return copy
    }

    /// Options for `JSONSerialization`. Default none (compact).
    public var writingOptions: JSONSerialization.WritingOptions {
        get { storedWritingOptions.value }
        set { storedWritingOptions.withLock { $0 = newValue } }
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
/// - Threading: as `HTTPRequestSerializer`; the property-list settings live behind a lock of their own.
///   Any thread.
open class PropertyListRequestSerializer: HTTPRequestSerializer, @unchecked Sendable {
    /// The property-list settings (the base class keeps its own).
    private struct Settings {
        var format: PropertyListSerialization.PropertyListFormat = .xml
        var writeOptions: PropertyListSerialization.WriteOptions = 0
    }

    private let plistSettings = Protected(Settings())

    /// A serializer writing XML property lists.
    public required init() {
        super.init()
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        let owner = PropertyListRequestSerializer.self
        var decoded = Settings()
        if let raw = coder.decodeCheckedInteger(forKey: "format", of: owner),
           let format = PropertyListSerialization.PropertyListFormat(rawValue: UInt(max(0, raw))) {
            decoded.format = format
        }
        decoded.writeOptions = PropertyListSerialization.WriteOptions(
            max(0, coder.decodeCheckedInteger(forKey: "writeOptions", of: owner) ?? 0))
        plistSettings.withLock { $0 = decoded }
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
        let current = plistSettings.value
        (copy as? PropertyListRequestSerializer)?.plistSettings.withLock { $0 = current }
        return copy
    }

    /// The property list format. Default `.xml`.
    public var format: PropertyListSerialization.PropertyListFormat {
        get { plistSettings.withLock { $0.format } }
        set { plistSettings.withLock { $0.format = newValue } }
    }
    /// Write options (unused by Foundation, kept for AFN parity). Default 0.
    public var writeOptions: PropertyListSerialization.WriteOptions {
        get { plistSettings.withLock { $0.writeOptions } }
        set { plistSettings.withLock { $0.writeOptions = newValue } }
    }

    /// The request with a property-list body, or the query string for methods in the URI.
    open override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest {
        if encodesParametersInURI(request) { return try super.request(bySerializing: request, withParameters: parameters) }
        var result = try applyingDefaultHeaders(request)
        guard let parameters else { return result }
        // Before Foundation: the property-list writer recurses once per level.
        try ParameterNesting.validate(parameters, url: request.url)
        do {
            let current = plistSettings.value
            result.httpBody = try PropertyListSerialization.data(fromPropertyList: parameters, format: current.format,
                                                                 options: current.writeOptions)
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
