import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Error domain of archives the library refuses to decode; the codes are `ArchiveErrorCode`.
public let ArchiveErrorDomain = "org.operationnetworking.error.archive"

/// Decodes archives of the library's classes without the ways corelibs' `NSKeyedUnarchiver` crashes.
///
/// On Linux, `NSKeyedUnarchiver` stops the process (instead of throwing) when an archive names a class
/// other than the one asked for. So before unarchiving, every class name in the archive is checked
/// against the library's classes, the requested class and the caller's `allowing:` list; the size is
/// bounded; nested objects are decoded as `NSObject` and then checked with `as?`; and a value of the
/// wrong type where a setting belongs (a string replaced by a number or the reverse) fails the whole
/// decoding rather than leaving a default in its place. Anything else is an `NSError` in
/// `ArchiveErrorDomain`.
/// - Threading: stateless; any thread.
public enum SafeArchive {
    /// Archives larger than this are refused unread (no unbounded allocation).
    public static let maximumSize = 16 << 20

    /// The archive (a binary property list) of `object`, with secure coding.
    public static func archive(_ object: NSSecureCoding & NSObject) throws -> Data {
        try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
    }

    /// The object of type `T` in `data`, or a thrown error for anything unexpected.
    ///
    /// The archive may name the library's archivable classes, `T` itself (your subclass of a manager,
    /// an operation, a serializer or the policy) and the classes in `allowing` — the subclasses nested
    /// inside it, e.g. your response serializer subclass held by a manager. Any other class is refused
    /// with `ArchiveErrorCode.unexpectedClass` before the unarchiver sees it. Only top-level classes
    /// that adopt `NSSecureCoding` can be allowed (others cannot be archived); any other entry is ignored.
    public static func unarchive<T: NSObject & NSSecureCoding>(_ type: T.Type, from data: Data,
                                                               allowing classes: [AnyClass] = []) throws -> T {
        guard data.count <= maximumSize else {
            throw LibraryError.archive(.tooLarge, "The archive is larger than \(maximumSize) bytes.")
        }
        let scanner = try scan(data)
        let names = scanner.classNames
        // Only the allowed classes may be constructed (NSObject and NSOperation appear solely in class
        // chains; constructing them, or any class not asked for, would stop corelibs' unarchiver).
        let allowed = allowedClasses(T.self, classes)
        let unexpected = names.subtracting(allowed.keys)
        guard unexpected.isEmpty else {
            throw LibraryError.archive(.unexpectedClass, "The archive names classes outside the expected set: \(unexpected.sorted().joined(separator: ", ")).")
        }
        let root: Any?
        let check = ArchiveCheck(nonNumericValues: scanner.nonNumericValues, classes: allowed)
        do {
            let previous = Thread.current.threadDictionary[ArchiveCheck.key]
            Thread.current.threadDictionary[ArchiveCheck.key] = check
            defer { Thread.current.threadDictionary[ArchiveCheck.key] = previous }
            root = try NSKeyedUnarchiver.unarchivedObject(ofClasses: [NSObject.self], from: data)
        } catch {
            // A tampered value makes its object's initializer fail; say so rather than "damaged".
            throw check.invalidValue ?? LibraryError.archive(.damaged, "The archive is damaged: \(error.localizedDescription)",
                                                             underlying: error)
        }
        if let invalid = check.invalidValue { throw invalid }
        guard let object = root as? T else {
            throw LibraryError.archive(.wrongRootClass, "The archive holds a \(root.map { String(describing: Swift.type(of: $0)) } ?? "nothing"), not a \(T.self).")
        }
        return object
    }

    /// The scanned archive — every `$classname` it mentions and which keys hold non-numbers — after
    /// checking the property list's structure (only binary archives, as `NSKeyedArchiver` writes them,
    /// are accepted).
    static func scan(_ data: Data) throws -> BinaryPropertyListScanner {
        var scanner = BinaryPropertyListScanner(data)
        do {
            try scanner.scan()
        } catch let invalid as BinaryPropertyListScanner.Invalid {
            throw LibraryError.archive(.damaged, "The archive is damaged: \(invalid.reason).")
        }
        guard !scanner.classNames.isEmpty else { throw LibraryError.archive(.damaged, "The data is not a keyed archive.") }
        return scanner
    }

    /// The classes an `unarchive` call accepts, by archived name: the library's, `root` and `extra`.
    static func allowedClasses(_ root: AnyClass, _ extra: [AnyClass]) -> [String: AnyClass] {
        var allowed = libraryClasses
        for candidate in [root] + extra {
            // corelibs stops the process when secure decoding meets a class without secure coding.
            guard (candidate as? NSSecureCoding.Type)?.supportsSecureCoding == true,
                  let name = archivedName(of: candidate) else { continue }
            allowed[name] = candidate
        }
        return allowed
    }

    /// The name an archive gives `type`, or `nil` for a class no archive can hold: corelibs'
    /// `NSStringFromClass` stops the process for a nested, private, local or generic class.
    static func archivedName(of type: AnyClass) -> String? {
        let qualified = String(reflecting: type)
        guard qualified.split(separator: ".", omittingEmptySubsequences: false).count == 2 else { return nil }
        return NSStringFromClass(type)
    }

    /// The library's archivable classes, by archived name.
    static let libraryClasses: [String: AnyClass] = {
        let library: [AnyClass] = [
            HTTPRequestOperationManager.self, SecurityPolicy.self, URLConnectionOperation.self, HTTPRequestOperation.self,
            HTTPRequestSerializer.self, JSONRequestSerializer.self, PropertyListRequestSerializer.self,
            HTTPResponseSerializer.self, JSONResponseSerializer.self, XMLParserResponseSerializer.self,
            XMLDocumentResponseSerializer.self, PropertyListResponseSerializer.self, ImageResponseSerializer.self,
            CompoundResponseSerializer.self,
        ]
        // Strings, data and numbers are stored inline; Foundation collections, whose decoders crash on
        // tampered input, are never archived by the library.
        return Dictionary(library.map { (NSStringFromClass($0), $0) }, uniquingKeysWith: { first, _ in first })
    }()
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

    /// A JSON value written by `encodeJSON`; `nil` when absent. A value that is damaged or of another
    /// type (`null` stands for a `nil` setting) fails the decoding (`failInvalidValue`) and gives `nil`.
    func decodeJSON<T>(_ type: T.Type, forKey key: String) -> T? {
        guard let data = decodeChecked(Data.self, forKey: key) else { return nil }
        guard let value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
            failInvalidValue(forKey: key, expected: "JSON value")
            return nil
        }
        if value is NSNull { return nil }
        guard let typed = value as? T else {
            failInvalidValue(forKey: key, expected: "\(T.self)")
            return nil
        }
        return typed
    }

    /// A nested object of the expected type, decoded without corelibs' crash on a different class:
    /// any secure-coding class is accepted by the unarchiver, then checked here. `nil` when absent;
    /// present but of another type (or an object that failed to decode) fails the decoding, because
    /// the library never archives `nil` under a key it writes.
    func decodeChecked<T>(_ type: T.Type, forKey key: String) -> T? {
        guard containsValue(forKey: key) else { return nil }
        guard let value = decodeObject(of: [NSObject.self], forKey: key) as? T else {
            failInvalidValue(forKey: key, expected: "\(T.self)")
            return nil
        }
        return value
    }

    /// Records that the archive holds an unusable value under `key` (a tampered archive), so that
    /// `SafeArchive.unarchive` fails instead of returning an object with a default in its place. Not
    /// through `failWithError`: corelibs prints it to stderr, and under its default policy stops the
    /// process. Other coders get `nil` (the caller's default) as before.
    func failInvalidValue(forKey key: String, expected: String) {
        ArchiveCheck.current?.record(
            LibraryError.archive(.invalidValue, "The archive's value for \"\(key)\" is not a valid \(expected)."))
    }
}

/// What `SafeArchive` learns while one decoding runs on the current thread: the first value of the
/// wrong type the library's decoders found, and — from the scan before decoding — which keys hold
/// values that are not numbers (corelibs' number decoders cannot tell). Corelibs' `NSKeyedUnarchiver`
/// cannot be subclassed from outside Foundation, so the check travels in the thread's dictionary for
/// the duration of the call.
/// - Threading: created, used and dropped by one thread within one `unarchive` call.
final class ArchiveCheck {
    static let key = "org.operationnetworking.archive-check"
    /// The first invalid value found, if any.
    private(set) var invalidValue: NSError?
    /// Archived key → `$classname`s of the objects holding a non-number under it.
    private let nonNumericValues: [String: Set<String>]
    /// The classes the archive may name, by archived name.
    private let classes: [String: AnyClass]

    init(nonNumericValues: [String: Set<String>], classes: [String: AnyClass]) {
        self.nonNumericValues = nonNumericValues
        self.classes = classes
    }

    /// Whether an object of `owner` (or a subclass) holds something other than a number under `key`.
    func holdsNonNumber(forKey key: String, in owner: AnyClass) -> Bool {
        // NSKeyedArchiver escapes a key that starts with "$" with one more "$".
        let archived = key.hasPrefix("$") ? "$" + key : key
        return nonNumericValues[archived, default: []].contains { name in
            // Every name was checked against `classes` before decoding; an unknown one is refused anyway.
            guard let type = classes[name] as? NSObject.Type else { return true }
            return type.isSubclass(of: owner)
        }
    }

    func record(_ error: NSError) {
        if invalidValue == nil { invalidValue = error }
    }

    /// The check of the decoding running on this thread, if `SafeArchive` started one.
    static var current: ArchiveCheck? { Thread.current.threadDictionary[key] as? ArchiveCheck }
}
