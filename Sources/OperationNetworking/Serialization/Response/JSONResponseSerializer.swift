import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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
