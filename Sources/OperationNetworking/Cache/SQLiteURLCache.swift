import CSQLite
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLCache` whose entries live in one SQLite database file, the library's default shared cache.
///
/// corelibs' own disk cache keys an entry by host, port and path (the query is dropped), lists the whole
/// directory on every call, and stops the process on some damaged files. This one keys an entry by its
/// full URL (`CacheEntryMetadata.key(for:)`: no fragment, scheme and host lowercased), finds it through
/// the table's index, and reads every value with Swift code that treats damage as a miss:
/// - a file SQLite reports as damaged or not a database, or that cannot be opened where it is (a
///   directory in its place, say), is deleted with its journal files and created anew;
/// - a row whose fields cannot be decoded, or do not match the checksum stored with them, is a miss,
///   and is deleted.
///
/// What it keeps: HTTP responses only (a `URLResponse` of another kind is not stored), their URL, status,
/// header fields and body, and of `userInfo` only the library's own metadata (the `Data` under
/// `CacheEntryMetadata.userInfoKey`); other `userInfo` values are not kept. A response whose policy is
/// `.allowedInMemoryOnly` or `.notAllowed` is not stored: there is no memory layer, so
/// `currentMemoryUsage` is always 0 and `memoryCapacity` only counts in `CacheStorage`'s size rule.
///
/// After each store, the least recently used entries (stored or read) are deleted while the entries
/// take more than `diskCapacity` bytes. When the directory cannot be used at all, the entries are kept
/// in an in-memory database for the life of the cache instead.
///
/// - Threading: any thread. One connection per cache, every use of it under one lock; no code outside
///   this file runs while it is held. Two processes sharing a directory wait for each other's lock
///   (up to a few seconds) instead of failing.
/// - Visibility: not part of the library's public API; `onet`'s `--cache-dir` reaches it
///   through `@_spi(Tool)`, so the tool's cache is the same store the library defaults to.
@_spi(Tool) public final class SQLiteURLCache: URLCache, @unchecked Sendable {
    /// The database's file name inside the cache's directory.
    static let fileName = "cache.sqlite3"

    private let database: Protected<Database>

    /// A cache keeping its entries in `directory`/`cache.sqlite3`, the directory created if needed.
    @_spi(Tool) public init(memoryCapacity: Int, diskCapacity: Int, directory: URL) {
        let path: String?
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            path = directory.appendingPathComponent(Self.fileName).path
        } catch {
            path = nil
        }
        database = Protected(Database(path: path, memoryCapacity: memoryCapacity, diskCapacity: diskCapacity))
        // corelibs' own store is never used: every method that reaches it is overridden. Given this
        // directory, it creates nothing elsewhere.
        super.init(memoryCapacity: 0, diskCapacity: 0, diskPath: directory.path)
    }

    /// Counted only by the library's size rule (an entry over about 5 % of the larger capacity is not stored).
    public override var memoryCapacity: Int {
        get { database.withLock { $0.memoryCapacity } }
        set { database.withLock { $0.memoryCapacity = newValue } }
    }

    /// The bytes the entries may take; setting it deletes the least recently used ones beyond it.
    public override var diskCapacity: Int {
        get { database.withLock { $0.diskCapacity } }
        set {
            database.withLock { database in
                database.diskCapacity = newValue
                database.use { connection in try Self.evict(in: connection, toFit: newValue) }
            }
        }
    }

    /// Always 0: no entry is kept in memory.
    public override var currentMemoryUsage: Int { 0 }

    /// The bytes the entries take (their URLs, header fields, bodies and metadata); the file adds
    /// SQLite's page overhead to it.
    public override var currentDiskUsage: Int {
        database.withLock { database in
            database.use { connection in try Self.totalSize(in: connection) } ?? 0
        }
    }

    /// The entry for the request's URL (fragment dropped), or `nil`; a damaged row is a miss and is deleted.
    public override func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        guard let url = request.url else { return nil }
        let key = CacheEntryMetadata.key(for: url)
        let found = database.withLock { database in
            database.use { connection in
                try connection.transaction { () -> [SQLiteValue]? in
                    let rows = try connection.run("""
                        SELECT response_url, status, header_fields, body, metadata, checksum FROM entries WHERE key = ?
                        """, [.text(key)])
                    guard let row = rows.first else { return nil }
                    try connection.run("UPDATE entries SET accessed_at = ? WHERE key = ?", [Self.now(), .text(key)])
                    return row
                }
            } ?? nil
        }
        guard let found else { return nil }
        guard let entry = try? StoredRow(found, key: key), let cached = entry.cachedResponse else {
            removeCachedResponse(for: request)
            return nil
        }
        return cached
    }

    /// Stores an HTTP response under the request's URL, replacing the entry there, then evicts the least
    /// recently used entries beyond `diskCapacity`.
    public override func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        guard cachedResponse.storagePolicy == .allowed, let url = request.url,
              let row = try? StoredRow(cachedResponse), let values = try? row.values else { return }
        let key = CacheEntryMetadata.key(for: url)
        database.withLock { database in
            let capacity = database.diskCapacity
            database.use { connection in
                try connection.transaction {
                    try connection.run("""
                        INSERT OR REPLACE INTO entries
                            (key, response_url, status, header_fields, body, metadata, checksum, size, stored_at,
                             accessed_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, [.text(key)] + values + [.integer(StoredRow.checksum(key: key, values: values)),
                                                      .integer(Int64(row.size + key.utf8.count)), Self.now(), Self.now()])
                    try Self.evict(in: connection, toFit: capacity)
                }
            }
        }
    }

    /// Deletes the entry for the request's URL, if any.
    public override func removeCachedResponse(for request: URLRequest) {
        guard let url = request.url else { return }
        let key = CacheEntryMetadata.key(for: url)
        _ = database.withLock { database in
            database.use { connection in try connection.run("DELETE FROM entries WHERE key = ?", [.text(key)]) }
        }
    }

    /// Deletes every entry.
    public override func removeAllCachedResponses() {
        _ = database.withLock { database in
            database.use { connection in try connection.run("DELETE FROM entries") }
        }
    }

    /// Deletes the entries stored after `date`.
    public override func removeCachedResponses(since date: Date) {
        _ = database.withLock { database in
            database.use { connection in
                try connection.run("DELETE FROM entries WHERE stored_at > ?", [.real(date.timeIntervalSinceReferenceDate)])
            }
        }
    }

    private static func now() -> SQLiteValue {
        .real(Date().timeIntervalSinceReferenceDate)
    }

    private static func totalSize(in connection: SQLiteConnection) throws -> Int {
        guard case .integer(let total) = try connection.run("SELECT COALESCE(SUM(size), 0) FROM entries").first?.first
        else { return 0 }
        return Int(clamping: total)
    }

    /// Deletes the least recently used entries while the entries take more than `capacity` bytes.
    private static func evict(in connection: SQLiteConnection, toFit capacity: Int) throws {
        var total = try totalSize(in: connection)
        guard total > capacity else { return }
        for row in try connection.run("SELECT key, size FROM entries ORDER BY accessed_at, rowid") {
            guard total > capacity else { return }
            guard row.count == 2, case .text(let key) = row[0], case .integer(let size) = row[1] else { continue }
            try connection.run("DELETE FROM entries WHERE key = ?", [.text(key)])
            total -= Int(clamping: size)
        }
    }
}

/// The cache's connection, opened on first use, and its capacities.
private struct Database {
    /// The database file, or nil when the directory cannot be used (an in-memory database then).
    var path: String?
    var connection: SQLiteConnection?
    var memoryCapacity: Int
    var diskCapacity: Int

    init(path: String?, memoryCapacity: Int, diskCapacity: Int) {
        self.path = path
        self.memoryCapacity = memoryCapacity
        self.diskCapacity = diskCapacity
    }

    /// Runs `body` on the connection; nil when it fails. A file found unusable (see
    /// `SQLiteError.isUnusableFile`) is replaced by a new one and `body` runs once more on it.
    @discardableResult
    mutating func use<Result>(_ body: (SQLiteConnection) throws -> Result) -> Result? {
        guard let connection = connect() else { return nil }
        do {
            return try body(connection)
        } catch let error as SQLiteError where error.isUnusableFile {
            replaceFile()
            guard let connection = connect() else { return nil }
            return try? body(connection)
        } catch {
            return nil
        }
    }

    /// The open connection, opening it first: a file that cannot be used is replaced, and when a new
    /// one cannot be made either, the entries are kept in memory.
    private mutating func connect() -> SQLiteConnection? {
        if let connection { return connection }
        if let path {
            do {
                connection = try Self.open(path)
            } catch let error as SQLiteError where error.isUnusableFile {
                replaceFile()
                connection = try? Self.open(path)
            } catch {
                // Busy past the timeout, say: tried again on the next call.
                return nil
            }
            guard connection == nil else { return connection }
            self.path = nil
        }
        connection = try? Self.open(":memory:")
        return connection
    }

    /// Closes the connection and deletes the file and its journals.
    private mutating func replaceFile() {
        connection = nil
        guard let path else { return }
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }

    /// The layout this version writes; a file with another is emptied and given this one.
    private static let schemaVersion: Int64 = 2

    private static func open(_ path: String) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 5_000)
        // Readers and the writer do not block each other, and a commit needs no sync of the file.
        try connection.run("PRAGMA journal_mode = WAL")
        try connection.run("PRAGMA synchronous = NORMAL")
        // Damage to the file's pages that SQLite would otherwise meet only on some later read is found
        // here, once per cache, and the file replaced (a later read that meets damage replaces it too).
        guard try connection.run("PRAGMA quick_check") == [[.text("ok")]] else {
            throw SQLiteError(code: SQLITE_CORRUPT, message: "quick_check found the file damaged")
        }
        guard try connection.run("PRAGMA user_version") != [[.integer(schemaVersion)]] else { return connection }
        try connection.transaction {
            // Checked again in the transaction: another process may have just made the table.
            guard try connection.run("PRAGMA user_version") != [[.integer(schemaVersion)]] else { return }
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
}
