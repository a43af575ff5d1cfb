import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - NSSecureCoding, NSCopying

/// Keys of a manager's archive.
private enum ManagerCodingKeys {
    static let version = CodingVersionKey
    static let baseURL = "baseURL"
    static let requestSerializer = "requestSerializer"
    static let responseSerializer = "responseSerializer"
    static let securityPolicy = "securityPolicy"
    static let shouldUseCredentialStorage = "shouldUseCredentialStorage"
    static let retryPolicy = "retryPolicy"
}

extension HTTPRequestOperationManager {
    /// `true`: decoding checks every class. Decode with `SafeArchive.unarchive(_:from:)`, which also
    /// refuses unexpected classes instead of letting corelibs' unarchiver stop the process.
    public static var supportsSecureCoding: Bool { true }

    /// Archives the base URL, both serializers, the security policy, `shouldUseCredentialStorage` and
    /// the retry policy (as JSON data), with `version` = 1. Never archived: the queue, completion queue and group, `credential` (the
    /// library writes no secret) and `clientCertificate` (it holds a private key). An `Authorization`
    /// header set on the request serializer *is* archived, as in AFNetworking.
    public func encode(with coder: NSCoder) {
        coder.encode(SerializationCodingVersion, forKey: ManagerCodingKeys.version)
        if let baseURL { coder.encode(baseURL.absoluteString, forKey: ManagerCodingKeys.baseURL) }
        coder.encode(requestSerializer, forKey: ManagerCodingKeys.requestSerializer)
        coder.encode(responseSerializer, forKey: ManagerCodingKeys.responseSerializer)
        coder.encode(securityPolicy, forKey: ManagerCodingKeys.securityPolicy)
        coder.encode(shouldUseCredentialStorage, forKey: ManagerCodingKeys.shouldUseCredentialStorage)
        coder.encodeJSON(retryPolicy.archived, forKey: ManagerCodingKeys.retryPolicy)
    }

    /// A manager equal in configuration, with its own empty queue and copies of the serializers and
    /// the policy (changing the copy never changes the original).
    public func copy(with zone: NSZone? = nil) -> Any {
        let copy = Swift.type(of: self).init(baseURL: baseURL)
        if let serializer = requestSerializer.copy() as? HTTPRequestSerializer { copy.requestSerializer = serializer }
        if let serializer = responseSerializer.copy() as? HTTPResponseSerializer { copy.responseSerializer = serializer }
        if let policy = securityPolicy.copy() as? SecurityPolicy { copy.securityPolicy = policy }
        copy.shouldUseCredentialStorage = shouldUseCredentialStorage
        copy.credential = credential
        copy.clientCertificate = clientCertificate
        copy.maximumResponseSize = maximumResponseSize
        copy.retryPolicy = retryPolicy
        copy.completionQueue = completionQueue
        copy.completionGroup = completionGroup
        copy.eventMonitors = eventMonitors
        return copy
    }

    /// Restores the settings of `coder` (called by `init?(coder:)`); missing keys keep defaults.
    func decodeSettings(from coder: NSCoder) {
        coder.checkCodingVersion(of: HTTPRequestOperationManager.self)
        if let serializer = coder.decodeChecked(HTTPRequestSerializer.self, forKey: ManagerCodingKeys.requestSerializer) {
            requestSerializer = serializer
        }
        if let serializer = coder.decodeChecked(HTTPResponseSerializer.self, forKey: ManagerCodingKeys.responseSerializer) {
            responseSerializer = serializer
        }
        if let policy = coder.decodeChecked(SecurityPolicy.self, forKey: ManagerCodingKeys.securityPolicy) {
            securityPolicy = policy
        }
        if let value = coder.decodeCheckedBool(forKey: ManagerCodingKeys.shouldUseCredentialStorage,
                                               of: HTTPRequestOperationManager.self) {
            shouldUseCredentialStorage = value
        }
        if let archived = coder.decodeJSON([String: Any].self, forKey: ManagerCodingKeys.retryPolicy) {
            if let policy = RetryPolicy(archived: archived) {
                retryPolicy = policy
            } else {
                coder.failInvalidValue(forKey: ManagerCodingKeys.retryPolicy, expected: "retry policy")
            }
        }
    }

    /// The base URL of an archive; a value that is not a URL string fails the decoding.
    static func decodeBaseURL(from coder: NSCoder) -> URL? {
        guard let text = coder.decodeChecked(String.self, forKey: ManagerCodingKeys.baseURL) else { return nil }
        guard let url = URL(string: text) else {
            coder.failInvalidValue(forKey: ManagerCodingKeys.baseURL, expected: "URL")
            return nil
        }
        return url
    }
}
