import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Everything a caller configures on an operation, as one value: `copy(with:)` and the manager hand
/// it over whole, so a setting added here cannot be forgotten by either.
///
/// Copy-on-write: the settings live in one shared storage object until a copy changes one, so the
/// ten thousand operations a manager queues share its configuration instead of carrying a copy each.
/// - Threading: a value; the operation keeps it in its `MutableState` behind its lock, the manager
///   behind its own. The storage is never written while shared (`isKnownUniquelyReferenced`).
struct OperationConfiguration {
    /// The settings. A class so that copies share it; written only through a unique reference.
    private final class Storage {
        var shouldUseCredentialStorage: Bool = true
        var credential: URLCredential? = nil
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
        var cacheBlock: URLConnectionOperation.CacheResponseBlock? = nil

        init() {}

        func copy() -> Storage {
            let copy = Storage()
            copy.shouldUseCredentialStorage = shouldUseCredentialStorage
            copy.credential = credential
            copy.securityPolicy = securityPolicy
            copy.clientCertificate = clientCertificate
            copy.maximumResponseSize = maximumResponseSize
            copy.retryPolicy = retryPolicy
            copy.proxy = proxy
            copy.proxyCredential = proxyCredential
            copy.completionQueue = completionQueue
            copy.completionGroup = completionGroup
            copy.uploadProgressBlock = uploadProgressBlock
            copy.downloadProgressBlock = downloadProgressBlock
            copy.redirectBlock = redirectBlock
            copy.challengeBlock = challengeBlock
            copy.cacheBlock = cacheBlock
            return copy
        }
    }

    private var storage = Storage()

    /// The storage, made unique before a write.
    private var writable: Storage {
        mutating get {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            return storage
        }
    }

    var shouldUseCredentialStorage: Bool {
        get { storage.shouldUseCredentialStorage }
        set { writable.shouldUseCredentialStorage = newValue }
    }
    var credential: URLCredential? {
        get { storage.credential }
        set { writable.credential = newValue }
    }
    /// The policy set by the caller; `nil` means `SecurityPolicy.default()`, made on first read (most
    /// operations never read theirs, and the default's snapshot is a constant).
    var securityPolicy: SecurityPolicy? {
        get { storage.securityPolicy }
        set { writable.securityPolicy = newValue }
    }
    var clientCertificate: ClientCertificate? {
        get { storage.clientCertificate }
        set { writable.clientCertificate = newValue }
    }
    var maximumResponseSize: Int64? {
        get { storage.maximumResponseSize }
        set { writable.maximumResponseSize = newValue }
    }
    var retryPolicy: RetryPolicy {
        get { storage.retryPolicy }
        set { writable.retryPolicy = newValue }
    }
    var proxy: ProxySetting {
        get { storage.proxy }
        set { writable.proxy = newValue }
    }
    var proxyCredential: URLCredential? {
        get { storage.proxyCredential }
        set { writable.proxyCredential = newValue }
    }
    var completionQueue: DispatchQueue? {
        get { storage.completionQueue }
        set { writable.completionQueue = newValue }
    }
    var completionGroup: DispatchGroup? {
        get { storage.completionGroup }
        set { writable.completionGroup = newValue }
    }
    var uploadProgressBlock: URLConnectionOperation.UploadProgressBlock? {
        get { storage.uploadProgressBlock }
        set { writable.uploadProgressBlock = newValue }
    }
    var downloadProgressBlock: URLConnectionOperation.DownloadProgressBlock? {
        get { storage.downloadProgressBlock }
        set { writable.downloadProgressBlock = newValue }
    }
    var redirectBlock: URLConnectionOperation.RedirectResponseBlock? {
        get { storage.redirectBlock }
        set { writable.redirectBlock = newValue }
    }
    var challengeBlock: URLConnectionOperation.AuthenticationChallengeBlock? {
        get { storage.challengeBlock }
        set { writable.challengeBlock = newValue }
    }
    var cacheBlock: URLConnectionOperation.CacheResponseBlock? {
        get { storage.cacheBlock }
        set { writable.cacheBlock = newValue }
    }

    /// The same configuration for another operation: the security policy is copied (it is a mutable
    /// class), everything else shared.
    func copied() -> OperationConfiguration {
        var copy = self
        if let policy = securityPolicy { copy.securityPolicy = (policy.copy() as? SecurityPolicy) ?? policy }
        return copy
    }

    /// Drops every block (an operation does when it finishes, to break the cycles blocks make).
    mutating func releaseBlocks() {
        guard uploadProgressBlock != nil || downloadProgressBlock != nil || redirectBlock != nil
                || challengeBlock != nil || cacheBlock != nil else { return }
        uploadProgressBlock = nil
        downloadProgressBlock = nil
        redirectBlock = nil
        challengeBlock = nil
        cacheBlock = nil
    }
}
