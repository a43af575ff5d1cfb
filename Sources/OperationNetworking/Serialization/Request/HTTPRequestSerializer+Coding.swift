import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - NSCopying, NSSecureCoding

extension HTTPRequestSerializer {
    /// Keys of the request serializers' archives; the request-setting ones also key `changed`.
    enum CodingKeys {
        static let version = CodingVersionKey
        static let headers = "httpRequestHeaders"
        static let style = "queryStringSerializationStyle"
        static let encoding = "stringEncoding"
        static let methods = "httpMethodsEncodingParametersInURI"
        static let timeout = "timeoutInterval"
        static let cachePolicy = "cachePolicy"
        static let cookies = "httpShouldHandleCookies"
        static let pipelining = "httpShouldUsePipelining"
        static let cellular = "allowsCellularAccess"
        static let serviceType = "networkServiceType"
    }

    /// Copies every setting into `copy` (the custom query block too: blocks are immutable).
    func copySettings(into copy: HTTPRequestSerializer) {
        let current = settings.value
        copy.settings.withLock { $0 = current }
    }

    /// Writes every setting except the custom query block, which cannot be archived.
    func encodeSettings(with coder: NSCoder) {
        let current = settings.value
        let changed = current.changed
        coder.encode(SerializationCodingVersion, forKey: CodingKeys.version)
        coder.encodeJSON(current.headers, forKey: CodingKeys.headers)
        coder.encode(Int(current.style.rawValue), forKey: CodingKeys.style)
        coder.encode(Int(current.encoding.rawValue), forKey: CodingKeys.encoding)
        coder.encodeJSON(current.methodsInURI.sorted(), forKey: CodingKeys.methods)
        if let value = changed[CodingKeys.timeout] as? TimeInterval { coder.encode(value, forKey: CodingKeys.timeout) }
        if let value = changed[CodingKeys.cachePolicy] as? URLRequest.CachePolicy {
            coder.encode(Int(value.rawValue), forKey: CodingKeys.cachePolicy)
        }
        if let value = changed[CodingKeys.cookies] as? Bool { coder.encode(value, forKey: CodingKeys.cookies) }
        if let value = changed[CodingKeys.pipelining] as? Bool { coder.encode(value, forKey: CodingKeys.pipelining) }
        if let value = changed[CodingKeys.cellular] as? Bool { coder.encode(value, forKey: CodingKeys.cellular) }
        if let value = changed[CodingKeys.serviceType] as? URLRequest.NetworkServiceType {
            coder.encode(Int(value.rawValue), forKey: CodingKeys.serviceType)
        }
    }

    /// Reads what `encodeSettings` wrote; absent keys keep their defaults.
    func decodeSettings(from coder: NSCoder) {
        var headers = settings.withLock { $0.headers }
        if let decoded = coder.decodeJSON([String: String].self, forKey: CodingKeys.headers) {
            headers = decoded
        }
        var changed: [String: Any] = [:]
        let owner = HTTPRequestSerializer.self
        coder.checkCodingVersion(of: owner)
        if let timeout = coder.decodeCheckedDouble(forKey: CodingKeys.timeout, of: owner) { changed[CodingKeys.timeout] = timeout }
        if let raw = coder.decodeCheckedInteger(forKey: CodingKeys.cachePolicy, of: owner),
           let policy = URLRequest.CachePolicy(rawValue: UInt(max(0, raw))) {
            changed[CodingKeys.cachePolicy] = policy
        }
        for key in [CodingKeys.cookies, CodingKeys.pipelining, CodingKeys.cellular] {
            if let value = coder.decodeCheckedBool(forKey: key, of: owner) { changed[key] = value }
        }
        if let raw = coder.decodeCheckedInteger(forKey: CodingKeys.serviceType, of: owner),
           let type = URLRequest.NetworkServiceType(rawValue: UInt(max(0, raw))) {
            changed[CodingKeys.serviceType] = type
        }
        let methods = coder.decodeJSON([String].self, forKey: CodingKeys.methods).map(Set.init)
        let style = QueryStringSerializationStyle(
            rawValue: UInt(max(0, coder.decodeCheckedInteger(forKey: CodingKeys.style, of: owner) ?? 0))) ?? .default
        let encoding = coder.decodeCheckedInteger(forKey: CodingKeys.encoding, of: owner)
            .map { String.Encoding(rawValue: UInt(max(0, $0))) } ?? .utf8
        settings.withLock {
            $0.headers = headers
            $0.changed = changed
            $0.style = style
            if let methods { $0.methodsInURI = methods }
            $0.encoding = encoding
        }
    }
}
