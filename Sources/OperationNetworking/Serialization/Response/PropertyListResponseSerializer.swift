import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Parses `application/x-plist` bodies (AFNetworking's `AFPropertyListResponseSerializer`).
/// An empty body is `nil`; a body that is not a property list is an error.
/// - Threading: as `HTTPResponseSerializer`; the property-list settings live behind a lock of their own.
///   Any thread.
open class PropertyListResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    /// The property-list settings (the base class keeps its own).
    private struct Settings {
        var format: PropertyListSerialization.PropertyListFormat = .xml
        var readOptions: PropertyListSerialization.ReadOptions = []
    }

    private let plistSettings = Protected(Settings())

    /// A serializer for `application/x-plist`.
    public required init() {
        super.init()
    }

    override class var defaultAcceptableContentTypes: Set<String>? { ["application/x-plist"] }
    override var gatesOnContentType: Bool { true }

    /// The expected format (not used when reading, as in AFN). Default `.xml`.
    public var format: PropertyListSerialization.PropertyListFormat {
        get { plistSettings.withLock { $0.format } }
        set { plistSettings.withLock { $0.format = newValue } }
    }
    /// Options for `PropertyListSerialization`. Default none.
    public var readOptions: PropertyListSerialization.ReadOptions {
        get { plistSettings.withLock { $0.readOptions } }
        set { plistSettings.withLock { $0.readOptions = newValue } }
    }

    override func decodedObject(from data: Data?, textEncodingName: @autoclosure () -> String?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        do {
            return try PropertyListSerialization.propertyList(from: data, options: readOptions, format: nil)
        } catch {
            throw decodingError("The body is not a property list.", underlying: error)
        }
    }

    /// A copy with every setting.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        let current = plistSettings.value
        (copy as? PropertyListResponseSerializer)?.plistSettings.withLock { $0 = current }
        return copy
    }

    /// Archives the settings.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(Int(format.rawValue), forKey: "format")
        coder.encode(Int(readOptions.rawValue), forKey: "readOptions")
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        let owner = PropertyListResponseSerializer.self
        var decoded = Settings()
        if let raw = coder.decodeCheckedInteger(forKey: "format", of: owner),
           let format = PropertyListSerialization.PropertyListFormat(rawValue: UInt(max(0, raw))) {
            decoded.format = format
        }
        decoded.readOptions = PropertyListSerialization.ReadOptions(
            rawValue: UInt(max(0, coder.decodeCheckedInteger(forKey: "readOptions", of: owner) ?? 0)))
        plistSettings.withLock { $0 = decoded }
    }
}
