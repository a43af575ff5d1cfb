import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Tries several serializers in order; the first that returns an object wins (its error, if it also
/// reported one, comes with it). When none does, the compound validates and returns the body itself,
/// as a plain `HTTPResponseSerializer` (AFNetworking's `AFCompoundResponseSerializer`).
/// - Threading: as `HTTPResponseSerializer`; the component list lives behind a lock of its own and is
///   copied out before any component runs. Any thread.
open class CompoundResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    private let storedSerializers = Protected<[HTTPResponseSerializer]>([])

    /// A compound of `responseSerializers`, tried in order.
    public convenience init(responseSerializers: [HTTPResponseSerializer]) {
        self.init()
        storedSerializers.withLock { $0 = responseSerializers }
    }

    /// An empty compound.
    public required init() {
        super.init()
    }

    /// The serializers tried in order.
    public var responseSerializers: [HTTPResponseSerializer] { storedSerializers.value }

    /// The first component's object, or the validated body.
    open override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        for serializer in responseSerializers {
            do {
                if let object = try serializer.responseObject(for: response, data: data) { return object }
            } catch let error as NSError where error.userInfo[ResponseObjectErrorKey] != nil {
                throw error   // an object came with an error: it wins, error included
            } catch {
                continue
            }
        }
        return try super.responseObject(for: response, data: data)
    }

    /// A copy with copies of every component.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        let parts = responseSerializers.compactMap { $0.copy() as? HTTPResponseSerializer }
        (copy as? CompoundResponseSerializer)?.storedSerializers.withLock { $0 = parts }
        return copy
    }

    /// Archives the components with the base settings.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        let parts = responseSerializers
        coder.encode(parts.count, forKey: "responseSerializers.count")
        for (index, part) in parts.enumerated() { coder.encode(part, forKey: "responseSerializers.\(index)") }
    }

    /// Restores the components (each of a serializer class of this library).
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        let count = min(max(0, coder.decodeCheckedInteger(forKey: "responseSerializers.count", of: CompoundResponseSerializer.self) ?? 0), 64)
        let parts = (0..<count).compactMap {
            coder.decodeChecked(HTTPResponseSerializer.self, forKey: "responseSerializers.\($0)")
        }
        storedSerializers.withLock { $0 = parts }
    }
}
