import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a caller configures on an operation, as one value: `copy(with:)` and the manager hand
/// it over whole, so a setting added here cannot be forgotten by either. Read and write the settings
/// as properties (`configuration.credential`), through `Settings`.
///
/// The settings are shared, not copied: every operation a manager makes holds the manager's settings
/// (one reference, not a copy of them each: apps queue operations by the thousand), and an operation
/// made alone holds the one default set. They are never changed in place; writing a setting gives the
/// configuration settings of its own, so no other holder sees the change.
/// - Threading: a value; the operation and the manager each keep theirs in their `Protected` state.
///   The shared settings are immutable.
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

        /// Whether any block is set.
        var hasBlocks: Bool {
            uploadProgressBlock != nil || downloadProgressBlock != nil || redirectBlock != nil || challengeBlock != nil
                || needNewBodyStreamBlock != nil || didReceiveResponseBlock != nil || cacheBlock != nil
        }
    }

    /// Settings that never change, so that configurations can share them.
    /// - Threading: immutable after init; any thread (configurations on many threads share one).
    private final class Shared: Sendable {
        let settings: Settings
        init(_ settings: Settings) { self.settings = settings }

        /// Every default, shared by each configuration until its first write.
        static let defaults = Shared(Settings())
    }

    /// The settings (every one its default until set).
    private var shared = Shared.defaults
    /// Read in place: reading one setting does not copy all of them.
    private var settings: Settings { _read { yield shared.settings } }

    /// A setting. Writing one replaces the settings this configuration holds: a write is made while
    /// configuring (not per request), and leaves every other holder's settings as they were.
    subscript<Value>(dynamicMember key: WritableKeyPath<Settings, Value>) -> Value {
        get { settings[keyPath: key] }
        set {
            var changed = shared.settings
            changed[keyPath: key] = newValue
            shared = Shared(changed)
        }
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

    /// Drops every block (an operation does when it finishes, to break the cycles blocks make). Settings
    /// without a block, the manager's usually, are kept as they are, still shared.
    mutating func releaseBlocks() {
        guard settings.hasBlocks else { return }
        var changed = settings
        changed.uploadProgressBlock = nil
        changed.downloadProgressBlock = nil
        changed.redirectBlock = nil
        changed.challengeBlock = nil
        changed.needNewBodyStreamBlock = nil
        changed.didReceiveResponseBlock = nil
        changed.cacheBlock = nil
        shared = Shared(changed)
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
