import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension NetworkThread {
    /// Process-wide facts read at most once per admission pass (`admitWaiting`), and what was read.
    ///
    /// Every first hop asks them, and they are not free: corelibs' `HTTPCookieStorage.cookies` is a
    /// `DispatchQueue.sync` (about 2,500 instructions), the environment a scan of `environ` (about
    /// 500). Within one pass the first answer serves the rest. That loses nothing a caller changed
    /// before enqueueing: every transfer admitted in a pass was submitted through the inbox lock before
    /// this turn's `drainInbox`, which comes before the pass and so before the read. Outside a pass (a
    /// redirect's or a challenge's next hop) each is read afresh. Cookies the library stores from a
    /// response arrive in curl's callbacks, never during a pass, so the next pass sees them.
    struct AdmissionPass {
        /// Whether `admitWaiting` is running; outside it nothing is kept.
        var running = false
        /// Whether the cookie storage held no cookie when first read in this pass.
        var cookieStorageEmpty: Bool?
        /// Whether the environment named a proxy when first read in this pass.
        var environmentNamesProxy: Bool?
    }

    /// Whether the process's cookie storage holds no cookie (see `AdmissionPass`).
    func cookieStorageIsEmpty() -> Bool {
        assertOnNetworkThread()
        if let known = pass.cookieStorageEmpty { return known }
        let empty = Transfer.cookieStorageIsEmpty()
        if pass.running { pass.cookieStorageEmpty = empty }
        return empty
    }

    /// Whether the environment names a proxy libcurl would use (see `AdmissionPass`).
    func environmentNamesProxy() -> Bool {
        assertOnNetworkThread()
        if let known = pass.environmentNamesProxy { return known }
        let names = Transfer.environmentNamesProxy()
        if pass.running { pass.environmentNamesProxy = names }
        return names
    }
}
