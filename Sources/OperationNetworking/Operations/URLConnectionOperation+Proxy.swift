import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension URLConnectionOperation {
    /// The proxy the request goes through (see `ProxySetting`). Default `.environment`; the manager
    /// sets its own. Set it before the operation starts. `copy()` keeps it; not archived with the
    /// operation.
    public var proxy: ProxySetting {
        get { self[setting: \.proxy] }
        set { self[setting: \.proxy] = newValue }
    }

    /// The credential for the proxy, answering its 407 (for an https request, the 407 to the tunnel's
    /// `CONNECT`) before `credential` and `URLCredentialStorage.shared`'s credential for the proxy's
    /// protection space. Default `nil`. Never archived.
    public var proxyCredential: URLCredential? {
        get { self[setting: \.proxyCredential] }
        set { self[setting: \.proxyCredential] = newValue }
    }
}
