import CSQLite
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SQLiteURLCache {
    /// The cache's connection, opened on first use, its capacities, and whether its files may be used.
    ///
    /// - Threading: owned by the cache's `Protected` lock.
    struct Database {
        /// Where the entries live.
        enum Store {
            /// The database file at this path, in a folder found to be the user's alone.
            case file(String)
            /// An in-memory database: the folder cannot be made.
            case memory
            /// None at all: the folder or the file is not the user's alone, or holds another database.
            case refused
        }

        var store: Store
        var connection: SQLiteConnection?
        /// The sentence saying why the files are not used (refused, or only in memory); nil while they are.
        var reason: String?
        /// Whether `takeWarning()` has handed `reason` out.
        var warningTaken = false
        /// Why the folder cannot be made, when the entries are kept in memory for it.
        var unavailable: CacheFileUnavailable?
        /// How many rows were read whole (their bodies included), for the tests of the size check.
        var rowsReadWhole = 0
        /// SQLite's `data_version` when the keys were last read: another process's commit changes it.
        var dataVersion: Int64?
        /// How many reads met another process's lock through all their tries, for the tests of the busy file.
        var readsFoundBusy = 0
        /// Whether the last attempt to open the file met another process's lock.
        private(set) var openFoundBusy = false

        /// Makes and checks the folder; `ownedLevels` counts it and the folders above it that are the
        /// cache's own.
        init(directory: URL, ownedLevels: Int) {
            do {
                try CacheFileSafety.prepareDirectory(directory, ownedLevels: ownedLevels)
                store = .file(directory.appendingPathComponent(SQLiteURLCache.fileName).path)
            } catch let refusal as CacheFileRefusal {
                store = .refused
                reason = refusal.description
            } catch {
                store = .memory
                unavailable = error as? CacheFileUnavailable
                reason = "\(error)"
            }
        }

        /// Whether the files were found not to be used; looks at them first when no call has yet.
        var isRefused: Bool {
            mutating get {
                _ = connect()
                if case .refused = store { return true }
                return false
            }
        }

        /// Runs `body` on the connection; nil when it fails. A file SQLite finds damaged is replaced by a
        /// new one (when it is the user's own regular file) and `body` runs once more on it.
        @discardableResult
        mutating func use<Result>(_ body: (SQLiteConnection) throws -> Result) -> Result? {
            guard let connection = connect() else { return nil }
            do {
                return try body(connection)
            } catch let error as SQLiteError where error.isDamage {
                guard replaceDamagedFile(), let connection = connect() else { return nil }
                return try? body(connection)
            } catch {
                return nil
            }
        }

        /// Runs `body` as `use` does, and says whether it failed because another process held the file
        /// past the wait (worth trying again), rather than for good.
        mutating func useTellingBusy<Result>(_ body: (SQLiteConnection) throws -> Result) -> (result: Result?, busy: Bool) {
            guard let connection = connect() else { return (nil, openFoundBusy) }
            do {
                return (try body(connection), false)
            } catch let error as SQLiteError where error.isBusy {
                return (nil, true)
            } catch let error as SQLiteError where error.isDamage {
                guard replaceDamagedFile(), let connection = connect() else { return (nil, false) }
                return ((try? body(connection)), false)
            } catch {
                return (nil, false)
            }
        }

        /// The open connection, opening it first. Nil for a refused store, and for a call that failed
        /// for a reason the next call may not meet (no descriptor left, a busy peer): nothing is
        /// deleted for it.
        private mutating func connect() -> SQLiteConnection? {
            if let connection { return connection }
            openFoundBusy = false
            switch store {
            case .refused:
                return nil
            case .memory:
                connection = try? Self.open(":memory:")
                return connection
            case .file(let path):
                do {
                    connection = try Self.open(path)
                } catch let error as SQLiteError where error.isDamage {
                    guard replaceDamagedFile() else { return nil }
                    connection = try? Self.open(path)
                } catch let refusal as CacheFileRefusal {
                    refuse(refusal)
                } catch let unavailable as CacheFileUnavailable {
                    store = .memory
                    self.unavailable = unavailable
                    reason = unavailable.description
                    return connect()
                } catch {
                    // Out of descriptors, busy, a file it may not read: tried again
                    // on the next call.
                    openFoundBusy = (error as? SQLiteError)?.isBusy ?? false
                    return nil
                }
                return connection
            }
        }

        private mutating func refuse(_ refusal: CacheFileRefusal) {
            connection = nil
            store = .refused
            reason = refusal.description
        }

        /// Closes the connection and deletes a damaged file and its journals, when they are the user's
        /// own regular files; true when a new file may be made.
        private mutating func replaceDamagedFile() -> Bool {
            connection = nil
            guard case .file(let path) = store else { return false }
            guard CacheFileSafety.mayReplace(path) else { return false }
            CacheFileSafety.remove(path)
            return true
        }

        /// The layout this version writes; a file of the cache's own objects with another is emptied
        /// and given this one.
        private static let schemaVersion: Int64 = 2

        /// The objects a cache file holds (type, name, table): the table and SQLite's own index for the
        /// primary key.
        private static let ownObjects: Set<[String]> = [
            ["table", "entries", "entries"], ["index", "sqlite_autoindex_entries_1", "entries"],
        ]

        /// An index on access time that files written by earlier versions hold: nothing reads it (the
        /// order of eviction is kept in memory), and every store and every use written paid for keeping
        /// it. A file that holds it is the cache's all the same; the index is dropped when it is opened.
        private static let formerIndex = ["index", "entries_by_access", "entries"]

        /// Opens the database at `path` (created 0600 first when missing), or ":memory:". Before anything
        /// is written, the file's schema is read: one holding any object but the cache's own is refused,
        /// and left as it is.
        private static func open(_ path: String) throws -> SQLiteConnection {
            let isFile = path != ":memory:"
            if isFile {
                try CacheFileSafety.prepareFile(path)
            }
            // A busy timeout of 0: a statement that meets another process's lock fails at once, and the
            // cache tries again with the file's lock released (`retryingWhileBusy`).
            let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 0, followingNoLink: isFile)
            let schema = try readSchema(connection, path: path)
            // Damage to the file's pages that SQLite would otherwise meet only on some later read is found
            // here, once per cache, and the file replaced (a later read that meets damage replaces it too).
            guard try connection.run("PRAGMA quick_check") == [[.text("ok")]] else {
                throw SQLiteError(code: SQLITE_CORRUPT, message: "quick_check found the file damaged")
            }
            // Readers and the writer do not block each other, and a commit needs no sync of the file.
            try connection.run("PRAGMA journal_mode = WAL")
            try connection.run("PRAGMA synchronous = NORMAL")
            if try schema.complete && connection.run("PRAGMA user_version") == [[.integer(schemaVersion)]] {
                if schema.holdsFormerIndex { try connection.run("DROP INDEX IF EXISTS entries_by_access") }
                return connection
            }
            try connection.transaction {
                // Checked again in the transaction: another process may have just made the table.
                let complete = try readSchema(connection, path: path).complete
                guard try !complete || connection.run("PRAGMA user_version") != [[.integer(schemaVersion)]] else { return }
                try connection.run("DROP TABLE IF EXISTS entries")
                try connection.run("""
                    CREATE TABLE entries (
                        key TEXT PRIMARY KEY NOT NULL, response_url TEXT NOT NULL, status INTEGER NOT NULL,
                        header_fields BLOB NOT NULL, body BLOB NOT NULL, metadata BLOB, checksum INTEGER NOT NULL,
                        size INTEGER NOT NULL,
                        stored_at REAL NOT NULL, accessed_at REAL NOT NULL)
                    """)
                try connection.run("PRAGMA user_version = \(schemaVersion)")
            }
            return connection
        }

        /// Whether the schema holds all of the cache's own objects, and the index of earlier versions;
        /// throws `CacheFileRefusal` when it holds any other (a table, a view, a trigger: another
        /// program's database, or one planted to run code in this process).
        private static func readSchema(_ connection: SQLiteConnection,
                                       path: String) throws -> (complete: Bool, holdsFormerIndex: Bool) {
            var found: Set<[String]> = []
            for row in try connection.run("SELECT type, name, tbl_name FROM sqlite_schema") {
                let object = row.map { value -> String in
                    if case .text(let text) = value { return text }
                    return ""
                }
                guard ownObjects.contains(object) || object == formerIndex else {
                    throw CacheFileRefusal(path: path, problem: "holds tables that are not the cache's "
                                           + "(\(object.prefix(2).joined(separator: " ")))")
                }
                found.insert(object)
            }
            return (found.isSuperset(of: ownObjects.filter { !$0[1].hasPrefix("sqlite_") }), found.contains(formerIndex))
        }
    }
}

extension SQLiteURLCache {
    /// How often, at most, a lookup asks the file whether another process changed it (SQLite's
    /// `data_version`), in seconds; then the keys are read again.
    static let versionCheckInterval: UInt64 = 1_000_000_000

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
        let rows = retryingWhileBusy { () -> (result: [(key: String, slot: Entries.Slot)]?, busy: Bool) in
            database.withLock { database in
                refused = database.isRefused
                guard !refused else { return (nil, false) }
                if database.openFoundBusy { return (nil, true) }
                let known = database.dataVersion
                let read = database.useTellingBusy { connection -> (rows: [(key: String, slot: Entries.Slot)], version: Int64)? in
                    guard case .integer(let version) = try connection.run("PRAGMA data_version").first?.first else { return nil }
                    // Only another connection's commit changes it: this cache's own writes leave it as it is.
                    guard !wasLoaded || known != version else { return nil }
                    let rows = try connection.run("SELECT key, size, accessed_at, stored_at FROM entries").compactMap(Self.slot(of:))
                    return (rows, version)
                }
                guard let found = read.result ?? nil else { return (nil, read.busy) }
                database.dataVersion = found.version
                return (found.rows, false)
            }
        }
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
        /// Another process held the file through every try (`busyTimeoutMilliseconds`): nothing is known.
        case busy
    }

    /// The entry the file holds under `key`, decoded; `.absent` when there is none, or its row is larger
    /// than the disk capacity (found before its body is read), damaged, or does not match its checksum
    /// (such a row is deleted in the same hold of the file's lock that found it); `.busy` when another
    /// process held the file through every try (`retryingWhileBusy`; the file is then left alone for
    /// `busyBackoff`).
    func readFromFile(_ key: String) -> FileRead {
        let capacity = entries.withLock { $0.diskCapacity }
        return retryingWhileBusy { () -> (result: FileRead, busy: Bool) in
            database.withLock { database in
                let read = database.useTellingBusy { connection -> [SQLiteValue]? in
                    guard try Self.fits(key: key, capacity: capacity, in: connection) else { return nil }
                    return try connection.run("""
                        SELECT response_url, status, header_fields, body, metadata, checksum, stored_at FROM entries WHERE key = ?
                        """, [.text(key)]).first
                }
                if read.busy { return (.busy, true) }
                guard let found = read.result ?? nil else { return (.absent, false) }
                database.rowsReadWhole += 1
                guard case .real(let storedAt) = found.last, let row = try? StoredRow(Array(found.dropLast()), key: key),
                      let entry = row.entry(key: key, storedAt: storedAt) else {
                    database.use { connection in try connection.run("DELETE FROM entries WHERE key = ?", [.text(key)]) }
                    return (.absent, false)
                }
                return (.entry(entry), false)
            }
        }
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
}
