import CSQLite
import Foundation

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
        /// How many reads met another process's lock past the wait, for the tests of the busy file.
        var readsFoundBusy = 0
        /// Whether the last attempt to open the file met another process's lock past the wait.
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
                    // Out of descriptors, busy past the timeout, a file it may not read: tried again
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

        /// The objects a cache file may hold (type, name, table): the table, its index on access time,
        /// and SQLite's own index for the primary key.
        private static let ownObjects: Set<[String]> = [
            ["table", "entries", "entries"], ["index", "entries_by_access", "entries"],
            ["index", "sqlite_autoindex_entries_1", "entries"],
        ]

        /// Opens the database at `path` (created 0600 first when missing), or ":memory:". Before anything
        /// is written, the file's schema is read: one holding any object but the cache's own is refused,
        /// and left as it is.
        private static func open(_ path: String) throws -> SQLiteConnection {
            let isFile = path != ":memory:"
            if isFile {
                try CacheFileSafety.prepareFile(path)
            }
            let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: SQLiteURLCache.busyTimeoutMilliseconds,
                                                  followingNoLink: isFile)
            let complete = try hasOwnSchema(connection, path: path)
            // Damage to the file's pages that SQLite would otherwise meet only on some later read is found
            // here, once per cache, and the file replaced (a later read that meets damage replaces it too).
            guard try connection.run("PRAGMA quick_check") == [[.text("ok")]] else {
                throw SQLiteError(code: SQLITE_CORRUPT, message: "quick_check found the file damaged")
            }
            // Readers and the writer do not block each other, and a commit needs no sync of the file.
            try connection.run("PRAGMA journal_mode = WAL")
            try connection.run("PRAGMA synchronous = NORMAL")
            guard try !complete || connection.run("PRAGMA user_version") != [[.integer(schemaVersion)]] else {
                return connection
            }
            try connection.transaction {
                // Checked again in the transaction: another process may have just made the table.
                let complete = try hasOwnSchema(connection, path: path)
                guard try !complete || connection.run("PRAGMA user_version") != [[.integer(schemaVersion)]] else { return }
                try connection.run("DROP TABLE IF EXISTS entries")
                try connection.run("""
                    CREATE TABLE entries (
                        key TEXT PRIMARY KEY NOT NULL, response_url TEXT NOT NULL, status INTEGER NOT NULL,
                        header_fields BLOB NOT NULL, body BLOB NOT NULL, metadata BLOB, checksum INTEGER NOT NULL,
                        size INTEGER NOT NULL,
                        stored_at REAL NOT NULL, accessed_at REAL NOT NULL)
                    """)
                try connection.run("CREATE INDEX entries_by_access ON entries (accessed_at)")
                try connection.run("PRAGMA user_version = \(schemaVersion)")
            }
            return connection
        }

        /// Whether the schema holds all of the cache's own objects; throws `CacheFileRefusal` when it
        /// holds any other (a table, a view, a trigger: another program's database, or one planted to
        /// run code in this process).
        private static func hasOwnSchema(_ connection: SQLiteConnection, path: String) throws -> Bool {
            var found: Set<[String]> = []
            for row in try connection.run("SELECT type, name, tbl_name FROM sqlite_schema") {
                let object = row.map { value -> String in
                    if case .text(let text) = value { return text }
                    return ""
                }
                guard ownObjects.contains(object) else {
                    throw CacheFileRefusal(path: path, problem: "holds tables that are not the cache's "
                                           + "(\(object.prefix(2).joined(separator: " ")))")
                }
                found.insert(object)
            }
            return found.isSuperset(of: ownObjects.filter { !$0[1].hasPrefix("sqlite_") })
        }
    }
}
