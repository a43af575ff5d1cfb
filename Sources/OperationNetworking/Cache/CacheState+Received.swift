import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CacheState {
    /// A response the transfer received whole: its parts, as the head gave them (no Foundation
    /// `HTTPURLResponse` is built for the cache).
    struct Received {
        /// The URL of the hop that answered.
        let url: URL
        let statusCode: Int
        /// Its header fields by lowercased name (repeated fields joined).
        let fields: [String: String]
        /// The body, or `nil` when it may not be stored (streamed to an output stream).
        let body: Data?
        /// The last hop's request (after redirects), whose fields a `Vary` names.
        let finalRequest: CacheRequest?
        /// Whether the body fits the cache (see `Storability.fits`).
        let fitsCache: Bool
        let requestTime: Date
        let responseTime: Date

        /// A response of `url` and `statusCode` with `headers` (any spelling of the names; `fields` when
        /// they are already by lowercased name).
        init(url: URL, statusCode: Int, headers: [String: String], body: Data?, finalRequest: CacheRequest?,
             fitsCache: Bool, requestTime: Date, responseTime: Date, lowercased: Bool = false) {
            self.url = url
            self.statusCode = statusCode
            fields = lowercased ? headers : headers.lowercasedNames
            self.body = body
            self.finalRequest = finalRequest
            self.fitsCache = fitsCache
            self.requestTime = requestTime
            self.responseTime = responseTime
        }
    }
}
