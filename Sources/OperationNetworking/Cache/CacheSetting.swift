import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which URL cache an operation uses: the shared one (read when it is asked for, so a program that
/// replaces `URLCache.shared` before its operations start is followed), one of the caller's, or none.
/// - Threading: an immutable value.
enum CacheSetting: Sendable {
    case shared
    case custom(URLCache)
    case off

    /// The setting for a value of `urlCache`: `nil` turns caching off.
    init(_ cache: URLCache?) {
        self = cache.map { .custom($0) } ?? .off
    }

    /// The cache, `nil` when caching is off. Call it outside any lock of the library: `URLCache.shared`
    /// takes a lock of Foundation's.
    var cache: URLCache? {
        switch self {
        case .shared: return CacheStorage.defaultShared()
        case .custom(let cache): return cache
        case .off: return nil
        }
    }

    /// Whether caching is off (what a manager's archive records).
    var isOff: Bool {
        if case .off = self { return true }
        return false
    }
}
