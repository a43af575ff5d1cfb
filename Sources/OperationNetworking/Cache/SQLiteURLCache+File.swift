import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SQLiteURLCache {
    /// How often, at most, a lookup asks the file whether another process changed it (SQLite's
    /// `data_version`), in seconds; then the keys are read again.
    static let versionCheckInterval: UInt64 = 1_000_000_000

    /// How long the file is left alone, in nanoseconds, after a read met another process's lock past
    /// `busyTimeoutMilliseconds`: lookups meanwhile answer from memory or miss at once, so that one
    /// lookup a second waits for the file, not every one (each behind the others, on the file's lock).
    static let busyBackoff: UInt64 = 1_000_000_000

    /// Whether a read met another process's lock less than `busyBackoff` ago.
    func fileIsBusy(now: UInt64) -> Bool {
        entries.withLock { now < $0.fileBusyUntil }
    }

    /// A read met another process's lock past the wait: the file is left alone for `busyBackoff`.
    func noteFileBusy() {
        let now = monotonicNow()
        entries.withLock { $0.fileBusyUntil = now &+ SQLiteURLCache.busyBackoff }
    }

    /// Reads the keys the file holds, at first use and again when another process changed the file
    /// (checked at most once per `versionCheckInterval`). A file that cannot be read now leaves the keys
    /// unread: the next call tries again (after `busyBackoff` when another process held it).
    func loadKeysIfNeeded() {
        let now = monotonicNow()
        let due = entries.withLock { entries -> Bool in
            guard now >= entries.fileBusyUntil else { return false }
            guard entries.isLoaded else { return true }
            guard now &- entries.lastVersionCheck >= SQLiteURLCache.versionCheckInterval else { return false }
            entries.lastVersionCheck = now
            return true
        }
        guard due else { return }
        let wasLoaded = entries.withLock { $0.isLoaded }
        var refused = false
        var busy = false
        let rows = database.withLock { database -> [(key: String, slot: Entries.Slot)]? in
            refused = database.isRefused
            guard !refused else { return nil }
            if database.openFoundBusy {
                // Opening it just waited for another process: not a second wait in the same call.
                busy = true
                database.readsFoundBusy += 1
                return nil
            }
            let known = database.dataVersion
            let read = database.useTellingBusy { connection -> (rows: [(key: String, slot: Entries.Slot)], version: Int64)? in
                guard case .integer(let version) = try connection.run("PRAGMA data_version").first?.first else { return nil }
                // Only another connection's commit changes it: this cache's own writes leave it as it is.
                guard !wasLoaded || known != version else { return nil }
                let rows = try connection.run("SELECT key, size, accessed_at, stored_at FROM entries").compactMap(Self.slot(of:))
                return (rows, version)
            }
            busy = read.busy
            if busy { database.readsFoundBusy += 1 }
            guard let found = read.result ?? nil else { return nil }
            database.dataVersion = found.version
            return found.rows
        }
        if busy { noteFileBusy() }
        if refused { entries.withLock { $0.refuse() } }
        guard let rows else { return }
        entries.withLock { entries in
            entries.load(rows)
            entries.lastVersionCheck = now
        }
    }

    /// A row of the keys' query as a slot; nil for a row of other types (it is then not found).
    private static func slot(of row: [SQLiteValue]) -> (key: String, slot: Entries.Slot)? {
        guard row.count == 4, case .text(let key) = row[0], case .integer(let size) = row[1],
              case .real(let accessed) = row[2], case .real(let stored) = row[3] else { return nil }
        return (key, Entries.Slot(size: Int(clamping: size), accessedAt: accessed, storedAt: stored))
    }

    /// What a read of one key from the file found.
    enum FileRead {
        case entry(Entry)
        /// No row, or one larger than the disk capacity, damaged, or not matching its checksum.
        case absent
        /// Another process held the file past the wait (`busyTimeoutMilliseconds`): nothing is known.
        case busy
    }

    /// The entry the file holds under `key`, decoded; `.absent` when there is none, or its row is larger
    /// than the disk capacity (found before its body is read), damaged, or does not match its checksum
    /// (such a row is deleted in the same hold of the file's lock that found it); `.busy` when another
    /// process held the file past the wait (the file is then left alone for `busyBackoff`).
    func readFromFile(_ key: String) -> FileRead {
        let capacity = entries.withLock { $0.diskCapacity }
        let read = database.withLock { database -> FileRead in
            let read = database.useTellingBusy { connection -> [SQLiteValue]? in
                guard try Self.fits(key: key, capacity: capacity, in: connection) else { return nil }
                return try connection.run("""
                    SELECT response_url, status, header_fields, body, metadata, checksum, stored_at FROM entries WHERE key = ?
                    """, [.text(key)]).first
            }
            if read.busy {
                database.readsFoundBusy += 1
                return .busy
            }
            guard let found = read.result ?? nil else { return .absent }
            database.rowsReadWhole += 1
            guard case .real(let storedAt) = found.last, let row = try? StoredRow(Array(found.dropLast()), key: key),
                  let entry = row.entry(key: key, storedAt: storedAt) else {
                database.use { connection in try connection.run("DELETE FROM entries WHERE key = ?", [.text(key)]) }
                return .absent
            }
            return .entry(entry)
        }
        if case .busy = read { noteFileBusy() }
        return read
    }

    /// Whether the row under `key` takes no more than `capacity` bytes, measured from the row's header
    /// (none of its values is read); a larger one is deleted. True when there is no row.
    private static func fits(key: String, capacity: Int, in connection: SQLiteConnection) throws -> Bool {
        let columns = ["response_url", "header_fields", "body", "metadata"]
        let rows = try connection.run("""
            SELECT rowid, \(columns.map { "typeof(\($0))" }.joined(separator: ", ")) FROM entries WHERE key = ?
            """, [.text(key)])
        guard let row = rows.first, case .integer(let rowid) = row.first else { return true }
        var size = key.utf8.count
        for (column, type) in zip(columns, row.dropFirst()) where type == .text("text") || type == .text("blob") {
            size += try connection.storedBytes(table: "entries", column: column, rowid: rowid)
        }
        guard size > capacity else { return true }
        try connection.run("DELETE FROM entries WHERE rowid = ?", [.integer(rowid)])
        return false
    }

    // MARK: - The end of the process

    /// The caches alive in the process, written when it ends (`exit`, or `main` returning) so that a
    /// store made just before is not lost.
    private static let live = Protected<[ObjectIdentifier: LiveCache]>([:])

    /// A cache known to `live`, without keeping it alive.
    private struct LiveCache: Sendable {
        weak var cache: SQLiteURLCache?
    }

    /// The handler that writes every live cache's changes at exit, installed once.
    private static let exitHandler: Void = {
        atexit {
            let caches = SQLiteURLCache.live.withLock { $0.values.compactMap(\.cache) }
            for cache in caches { cache.flush() }
        }
    }()

    /// Registers `cache` to be written at exit.
    static func writeAtExit(_ cache: SQLiteURLCache) {
        _ = exitHandler
        live.withLock { live in
            live = live.filter { $0.value.cache != nil }
            live[ObjectIdentifier(cache)] = LiveCache(cache: cache)
        }
    }
}
