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
    static let proxyURL = "proxy.url"
    static let proxyBypass = "proxy.bypass"
    static let cachingOff = "urlCache.isNil"
    static let unixSocketPath = "unixSocketPath"
}

extension HTTPRequestOperationManager {
    /// `true`: decoding checks every class. Decode with `SafeArchive.unarchive(_:from:)`, which also
    /// refuses unexpected classes instead of letting corelibs' unarchiver stop the process.
    public static var supportsSecureCoding: Bool { true }

    /// Archives the base URL, both serializers, the security policy, `shouldUseCredentialStorage`, the
    /// retry policy (as JSON data), the proxy setting, `unixSocketPath` and whether `urlCache` is `nil` (never the cache
    /// itself: a restored manager uses `URLCache.shared` unless caching was off), with `version` = 1. Never archived: the queue,
    /// completion queue and group, `credential` and `proxyCredential` (the library writes no secret),
    /// `clientCertificate` (it holds a private key), and a user and password written in the proxy's URL
    /// (the URL is archived without them: a restored manager logs into the proxy with its
    /// `proxyCredential` or the credential stored for the proxy) or in the base URL (archived without
    /// them too: the app sets `credential` again). An `Authorization`
    /// header set on the request serializer *is* archived, as in AFNetworking.
    public func encode(with coder: NSCoder) {
        coder.encode(SerializationCodingVersion, forKey: ManagerCodingKeys.version)
        if let baseURL { coder.encode(baseURL.archivedString, forKey: ManagerCodingKeys.baseURL) }
        coder.encode(requestSerializer, forKey: ManagerCodingKeys.requestSerializer)
        coder.encode(responseSerializer, forKey: ManagerCodingKeys.responseSerializer)
        coder.encode(securityPolicy, forKey: ManagerCodingKeys.securityPolicy)
        coder.encode(shouldUseCredentialStorage, forKey: ManagerCodingKeys.shouldUseCredentialStorage)
        coder.encodeJSON(retryPolicy.archived, forKey: ManagerCodingKeys.retryPolicy)
        if let proxy = proxy.archived {
            coder.encode(proxy.url, forKey: ManagerCodingKeys.proxyURL)
            coder.encodeJSON(proxy.bypass, forKey: ManagerCodingKeys.proxyBypass)
        }
        coder.encode(operationConfiguration.urlCache.isOff, forKey: ManagerCodingKeys.cachingOff)
        if let unixSocketPath { coder.encode(unixSocketPath, forKey: ManagerCodingKeys.unixSocketPath) }
    }

    /// A manager equal in configuration, with its own empty queue and copies of the serializers and
    /// the policy (changing the copy never changes the original).
    public func copy(with zone: NSZone? = nil) -> Any {
        let copy = Swift.type(of: self).init(baseURL: baseURL)
        if let serializer = requestSerializer.copy() as? HTTPRequestSerializer { copy.requestSerializer = serializer }
        if let serializer = responseSerializer.copy() as? HTTPResponseSerializer { copy.responseSerializer = serializer }
        var configuration = operationConfiguration
        configuration.securityPolicy = securityPolicy.copy() as? SecurityPolicy ?? configuration.securityPolicy
        copy.operationConfiguration = configuration
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
        if let path = URLConnectionOperation.decodeUnixSocketPath(from: coder, forKey: ManagerCodingKeys.unixSocketPath) {
            unixSocketPath = path
        }
        if coder.decodeCheckedBool(forKey: ManagerCodingKeys.cachingOff, of: HTTPRequestOperationManager.self) == true {
            urlCache = nil
        }
        if let proxyURL = coder.decodeChecked(String.self, forKey: ManagerCodingKeys.proxyURL) {
            let bypass = coder.decodeJSON([String].self, forKey: ManagerCodingKeys.proxyBypass) ?? []
            proxy = ProxySetting(archivedURL: proxyURL, bypass: bypass)
            if !proxyURL.isEmpty, case .environment = proxy {
                coder.failInvalidValue(forKey: ManagerCodingKeys.proxyURL, expected: "proxy URL")
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
