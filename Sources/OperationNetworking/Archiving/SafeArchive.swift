import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Error domain of archives the library refuses to decode.
public let ArchiveErrorDomain = "org.operationnetworking.error.archive"

/// Decodes archives of the library's classes without the ways corelibs' `NSKeyedUnarchiver` crashes.
///
/// On Linux, `NSKeyedUnarchiver` stops the process (instead of throwing) when an archive names a class
/// other than the one asked for. So before unarchiving, every class name in the archive is checked
/// against the library's classes and the Foundation value classes they use; the size is bounded; and
/// nested objects are decoded as `NSObject` and then checked with `as?`. Anything else is an `NSError`
/// in `ArchiveErrorDomain`.
/// - Threading: stateless; any thread.
public enum SafeArchive {
    /// Archives larger than this are refused unread (no unbounded allocation).
    public static let maximumSize = 16 << 20

    /// The archive (a binary property list) of `object`, with secure coding.
    public static func archive(_ object: NSSecureCoding & NSObject) throws -> Data {
        try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
    }

    /// The object of type `T` in `data`, or a thrown error for anything unexpected.
    public static func unarchive<T: NSObject & NSSecureCoding>(_ type: T.Type, from data: Data) throws -> T {
        guard data.count <= maximumSize else {
            throw error(1, "The archive is larger than \(maximumSize) bytes.")
        }
        let names = try classNames(in: data)
        // Only the library's own classes may be constructed (NSObject and NSOperation appear solely in
        // class chains; constructing them would stop corelibs' unarchiver).
        let unexpected = names.subtracting(libraryClassNames)
        guard unexpected.isEmpty else {
            throw error(2, "The archive names classes outside the expected set: \(unexpected.sorted().joined(separator: ", ")).")
        }
        let root: Any?
        do {
            root = try NSKeyedUnarchiver.unarchivedObject(ofClasses: [NSObject.self], from: data)
        } catch {
            throw SafeArchive.error(3, "The archive is damaged: \(error.localizedDescription)", underlying: error)
        }
        guard let object = root as? T else {
            throw error(4, "The archive holds a \(root.map { String(describing: Swift.type(of: $0)) } ?? "nothing"), not a \(T.self).")
        }
        return object
    }

    /// Every `$classname` an `NSKeyedArchiver` archive mentions, after checking the property list's
    /// structure (only binary archives, as `NSKeyedArchiver` writes them, are accepted).
    static func classNames(in data: Data) throws -> Set<String> {
        var scanner = BinaryPropertyListScanner(data)
        do {
            try scanner.scan()
        } catch let invalid as BinaryPropertyListScanner.Invalid {
            throw error(3, "The archive is damaged: \(invalid.reason).")
        }
        guard !scanner.classNames.isEmpty else { throw error(3, "The data is not a keyed archive.") }
        return scanner.classNames
    }

    /// The library's archivable classes.
    static let libraryClassNames: Set<String> = {
        let library: [AnyClass] = [
            HTTPRequestOperationManager.self, SecurityPolicy.self, URLConnectionOperation.self, HTTPRequestOperation.self,
            HTTPRequestSerializer.self, JSONRequestSerializer.self, PropertyListRequestSerializer.self,
            HTTPResponseSerializer.self, JSONResponseSerializer.self, XMLParserResponseSerializer.self,
            XMLDocumentResponseSerializer.self, PropertyListResponseSerializer.self, ImageResponseSerializer.self,
            CompoundResponseSerializer.self,
        ]
        // Strings, data and numbers are stored inline; Foundation collections, whose decoders crash on
        // tampered input, are never archived by the library.
        return Set(library.map { NSStringFromClass($0) })
    }()

    private static func error(_ code: Int, _ description: String, underlying: Error? = nil) -> NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return NSError(domain: ArchiveErrorDomain, code: code, userInfo: info)
    }
}

extension NSCoder {
    /// Writes a JSON value (dictionary, array, string, number) as plain data. Foundation collections
    /// are never archived: corelibs' `NSDictionary(coder:)` and friends trust the archive and crash on
    /// a tampered one, while data and strings are stored inline and read back without code running.
    func encodeJSON(_ value: Any, forKey key: String) {
        // corelibs' JSONSerialization stops the process for a top level that is not a container.
        if value is NSNull {
            encode(Data("null".utf8), forKey: key)
        } else if JSONSerialization.isValidJSONObject(value),
                  let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]) {
            encode(data, forKey: key)
        }
    }

    /// A JSON value written by `encodeJSON`, or `nil` when absent, damaged or of another type.
    func decodeJSON<T>(_ type: T.Type, forKey key: String) -> T? {
        guard let data = decodeChecked(Data.self, forKey: key),
              let value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        return value as? T
    }

    /// A nested object of the expected type, decoded without corelibs' crash on a different class:
    /// any secure-coding class is accepted by the unarchiver, then checked here. `nil` when absent or
    /// of another type.
    func decodeChecked<T>(_ type: T.Type, forKey key: String) -> T? {
        guard containsValue(forKey: key) else { return nil }
        return decodeObject(of: [NSObject.self], forKey: key) as? T
    }
}
