import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - What the transfer's end decides

extension CacheState {
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
    /// fields or an entry of its own being built.
    struct Repeat {
        /// The entry repeated, and where the storage holds it (`StoredResponse.place`).
        let entry: Entry
        let place: StoredResponse.Place
        let received: Received
        let body: Data
        let varying: [String: String]
        let trust: String?
        let control: CacheControl

        /// The response as it would be stored were the entry gone (replaced or removed meanwhile).
        var response: StoredResponse {
            CacheState.stored(received, body: body, varying: varying, trust: trust, control: control)
        }
    }
}
