import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Header fields as the cache reads them: names without case, every value a string.
extension HTTPURLResponse {
    /// The response's header fields as strings (Foundation keeps them as `[AnyHashable: Any]`).
    var headerFields: [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in allHeaderFields {
            guard let name = name as? String else { continue }
            fields[name] = value as? String ?? "\(value)"
        }
        return fields
    }
}

extension Dictionary where Key == String, Value == String {
    /// The same fields by lowercased name (two spellings of one name: either value).
    var lowercasedNames: [String: String] {
        // The cache's own dictionaries are lowercase already: kept as they are, without a new one.
        guard keys.contains(where: { $0.utf8.contains { (0x41...0x5A).contains($0) } }) else { return self }
        return Dictionary(map { (asciiLowercased($0.key), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// The value of the field `name`, compared without case (the first spelling found). Found at once
    /// when `name` is lowercase and so are the keys (the cache's own dictionaries of fields).
    func headerValue(_ name: String) -> String? {
        if let exact = self[name] { return exact }
        return first { asciiCaseInsensitiveEquals($0.key, name) }?.value
    }
}
