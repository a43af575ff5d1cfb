import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - What the run decides before it starts

extension CacheState {
    /// What the run does before its request goes out.
    enum Decision {
        /// A stored response answers (its `Age` set, §4): deliver it without the network, as a head (no
        /// Foundation `HTTPURLResponse` is built unless someone reads `response`).
        case deliver(ResponseHead, Data)
        /// A stale response within its `stale-while-revalidate` window answers at once, as `deliver` does,
        /// and `revalidation` refreshes it in the background (RFC 5861 §3).
        case deliverStale(ResponseHead, Data, revalidation: BackgroundRevalidation)
        /// Send the request conditional on the stored response (§4.3.1), with the fields `addedFields`
        /// says (the transfer carries them, `Transfer.conditionalFields`, or they are on the request an
        /// interceptor adapts).
        case revalidate
        /// Send the request as it is.
        case load
        /// Fail with `URLError(.resourceUnavailable)`: the request may not load.
        case fail
    }
}

// MARK: - What the transfer's end decides

extension CacheState {
    /// The response `received` as the cache stores it, its `Cache-Control` parsed as `control`.
    static func stored(_ received: Received, body: Data, varying: [String: String], trust: String?,
                       control: CacheControl) -> StoredResponse {
        let fields = Storability.storedFields(of: received.head)
        return StoredResponse(url: received.url, statusCode: received.statusCode, headers: fields, body: body,
                              varyingRequestHeaders: varying, requestTime: received.requestTime,
                              responseTime: received.responseTime, trust: trust, fields: fields,
                              facts: FreshnessFacts(fields, control: control),
                              head: received.head.hasSetCookie ? nil : received.head)
    }

    /// What the owner does with the transfer's end.
    struct Plan {
        /// Deliver this response and body in place of the `304` received.
        var deliver: (response: ResponseHead, body: Data)?
        /// Store this, under each URL (after the cache response block had its say).
        var store: (stored: StoredResponse, keys: [URL])?
        /// The response only repeats the stored one the run found, where nothing depends on when it
        /// came: that entry stays, used now, while the storage still holds it; `store` is `nil` then.
        var repeated: Repeat?
        /// Drop what is stored under these URLs.
        var remove: [URL] = []

        /// What to store, the response that repeats an entry built now (to offer it to the cache
        /// response block, or to a storage that no longer holds the entry).
        var storeCandidate: (stored: StoredResponse, keys: [URL])? {
            store ?? repeated.map { ($0.response, [$0.entry.key]) }
        }
    }

    /// A response received that repeats the stored one the run found (`StoredResponse.isRepeated`): the
    /// same status, URL, body, trust and secondary key, the same head but `Date`, and fields that give
    /// it no freshness lifetime and no time to serve it stale, or a bare `no-cache` — validated (or
    /// fetched again) before every use, or read as it is (`.returnCacheDataElseLoad`), so writing it
    /// again would change nothing a request can see. The usual API response without cache fields,
    /// fetched again and again, is decided so from its head and the entry, without a dictionary of its
    /// fields or an entry of its own being built. A `304` that changes none of such an entry's fields
    /// but `Date` repeats it too (`StoredResponse.isRepeated(byNotModified:)`).
    struct Repeat {
        /// The entry repeated, and where the storage holds it (`StoredResponse.place`).
        let entry: Entry
        let place: StoredResponse.Place
        /// Makes the response as it would be stored were the entry gone (replaced or removed meanwhile):
        /// built only then.
        let makeResponse: () -> StoredResponse

        var response: StoredResponse { makeResponse() }
    }
}
