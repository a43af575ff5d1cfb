import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a caller configures on an operation, as one value: `copy(with:)` and the manager hand
/// it over whole, so a setting added here cannot be forgotten by either. Read and write the settings
/// as properties (`configuration.credential`), through `Settings`.
/// - Threading: a value; the operation and the manager each keep theirs in their `Protected` state.
@dynamicMemberLookup
struct OperationConfiguration {
    /// The settings themselves.
    struct Settings {
        var shouldUseCredentialStorage: Bool = true
        var credential: URLCredential? = nil
        /// The policy set by the caller; `nil` means `SecurityPolicy.default()`, made on first read.
        var securityPolicy: SecurityPolicy? = nil
        var clientCertificate: ClientCertificate? = nil
        var maximumResponseSize: Int64? = nil
        var retryPolicy: RetryPolicy = RetryPolicy.none
        var proxy: ProxySetting = ProxySetting.environment
        var proxyCredential: URLCredential? = nil
        var completionQueue: DispatchQueue? = nil
        var completionGroup: DispatchGroup? = nil
        var uploadProgressBlock: URLConnectionOperation.UploadProgressBlock? = nil
        var downloadProgressBlock: URLConnectionOperation.DownloadProgressBlock? = nil
        var redirectBlock: URLConnectionOperation.RedirectResponseBlock? = nil
        var challengeBlock: URLConnectionOperation.AuthenticationChallengeBlock? = nil
        var needNewBodyStreamBlock: URLConnectionOperation.NeedNewBodyStreamBlock? = nil
        var didReceiveResponseBlock: URLConnectionOperation.DidReceiveResponseBlock? = nil
        var cacheBlock: URLConnectionOperation.CacheResponseBlock? = nil
        var urlCache: CacheSetting = CacheSetting.shared
    }

    /// The settings (every one its default until set).
    private var settings = Settings()

    /// A setting.
    subscript<Value>(dynamicMember key: WritableKeyPath<Settings, Value>) -> Value {
        get { settings[keyPath: key] }
        set { settings[keyPath: key] = newValue }
    }

    /// The queue progress blocks and handlers run on, the default applied.
    var effectiveCompletionQueue: DispatchQueue { settings.completionQueue ?? CallbackQueues.callback }
    /// The group handlers run in, the default applied.
    var effectiveCompletionGroup: DispatchGroup { settings.completionGroup ?? CallbackQueues.group }

    /// The same configuration for another operation: the security policy is copied (it is a mutable
    /// class), everything else shared.
    func copied() -> OperationConfiguration {
        var copy = self
        if let policy = self.securityPolicy { copy.securityPolicy = (policy.copy() as? SecurityPolicy) ?? policy }
        return copy
    }

    /// Drops every block (an operation does when it finishes, to break the cycles blocks make).
    mutating func releaseBlocks() {
        settings.uploadProgressBlock = nil
        settings.downloadProgressBlock = nil
        settings.redirectBlock = nil
        settings.challengeBlock = nil
        settings.needNewBodyStreamBlock = nil
        settings.didReceiveResponseBlock = nil
        settings.cacheBlock = nil
    }
}

/// What `dump` and other reflection show of an operation's or a manager's settings: credentials by
/// user alone, never their password (corelibs' `URLCredential` reflects its password in the clear).
extension OperationConfiguration.Settings: CustomReflectable {
    var customMirror: Mirror {
        func shown(_ credential: URLCredential?) -> String {
            guard let credential else { return "nil" }
            return "URLCredential(user: \(credential.user ?? "nil"), password: \(URLRedaction.placeholder))"
        }
        return Mirror(self, children: [
            "shouldUseCredentialStorage": shouldUseCredentialStorage, "credential": shown(credential),
            "securityPolicy": securityPolicy as Any, "clientCertificate": clientCertificate as Any,
            "maximumResponseSize": maximumResponseSize as Any, "retryPolicy": retryPolicy, "proxy": proxy,
            "proxyCredential": shown(proxyCredential), "completionQueue": completionQueue as Any,
            "completionGroup": completionGroup as Any,
        ], displayStyle: .struct)
    }
}
