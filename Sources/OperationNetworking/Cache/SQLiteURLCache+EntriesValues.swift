import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The values the cache's memory state (`SQLiteURLCache.Entries`) deals in.

extension SQLiteURLCache {
    /// Told once whether a store reached the file: true when the batch holding it was written, false when
    /// that batch failed for good (a full disk) or the store was replaced or removed before it was.
    typealias WriteReport = @Sendable (_ written: Bool) -> Void

    /// What is waiting to be written: the newest change of each key, and whether everything (or what
    /// was stored after a date) goes first.
    enum PendingWrite {
        case store(Entry)
        case remove
    }
}

extension SQLiteURLCache.Entries {
    typealias Entry = SQLiteURLCache.Entry
    typealias WriteReport = SQLiteURLCache.WriteReport
    typealias PendingWrite = SQLiteURLCache.PendingWrite

    /// A key the file holds (or will, once written), and its entry when memory keeps it: one record
    /// a key, so that a lookup or a use hashes the key once.
    struct Slot {
        var size: Int
        var accessedAt: Double
        var storedAt: Double
        /// Its place in `slotOrder` (-1 until the slot is added to the slots).
        var place: RecencyOrder<String>.Place = -1
        /// The entry, when memory keeps it.
        var kept: Kept? = nil
        /// Whether `accessedAt` changed since the last batch took it (the key is then in `touchedKeys`).
        var accessUnwritten = false
    }

    /// An entry kept in memory, with its place in `keptOrder`: boxed, so that the many slots without
    /// one stay small.
    final class Kept: Sendable {
        let entry: Entry
        let place: RecencyOrder<String>.Place
        init(entry: Entry, place: RecencyOrder<String>.Place) {
            self.entry = entry
            self.place = place
        }
    }

    /// What memory says of `key`.
    enum Lookup {
        /// The entry, from memory (kept, or waiting to be written).
        case entry(Entry)
        /// Nothing is stored under it.
        case absent
        /// The file holds it: read it there.
        case inFile
    }

    /// What a store did.
    enum StoreOutcome {
        /// Nothing: the files are refused (nothing reported).
        case refused
        /// The entry is in memory and will be written; its report is told when it is.
        case stored
        /// The entry only repeats the one memory holds (`repeatsWithoutTime`), which stays, used now;
        /// `written` when that one is already in the file (the report is told so at once), otherwise
        /// the report waits for its write.
        case repeated(written: Bool)
    }

    /// What the next write takes: the changes, the recency and the clearing to write now.
    struct Batch {
        let changes: [(key: String, write: PendingWrite, number: UInt64)]
        let touched: [String: Double]
        let clearAll: Bool
        let clearSince: Double?
    }
}
