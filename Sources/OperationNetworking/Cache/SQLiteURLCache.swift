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
/// - a file SQLite reports as damaged or not a database is deleted with its journal files and created
///   anew, when it is the user's own regular file; a file that merely cannot be opened now (no
///   descriptor left, a busy peer, no permission) is never deleted: that call is a miss;
/// - a row whose fields cannot be decoded, or do not match the checksum stored with them, is a miss,
///   and is deleted; so is a row larger than `diskCapacity`, found so before its body is read.
///
/// Its folder and files must be the user's alone (see `CacheFileSafety`): created 0700 and 0600
/// whatever the umask, and refused when owned by another user, writable by others, a symbolic link,
/// or holding a database with anything but the cache's own table. A refused cache keeps no entries at
/// all and changes nothing on disk; `takeWarning()` says why.
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
@_spi(Tool) public final class SQLiteURLCache: URLCache, CacheFileWarnings, @unchecked Sendable {
    /// The database's file name inside the cache's directory.
    static let fileName = "cache.sqlite3"

    private let database: Protected<Database>

    /// A cache keeping its entries in `directory`/`cache.sqlite3`, the directory created (0700) if
    /// needed. The directory must be the user's alone, and so must its parent when that is the shared
    /// cache's `org.operationnetworking.URLCache` folder (the library owns both levels there).
    @_spi(Tool) public init(memoryCapacity: Int, diskCapacity: Int, directory: URL) {
        let ownedLevels = directory.deletingLastPathComponent().lastPathComponent == SharedCacheLocation.folderName ? 2 : 1
        database = Protected(Database(directory: directory, ownedLevels: ownedLevels, memoryCapacity: memoryCapacity,
                                      diskCapacity: diskCapacity))
        // corelibs' own store is never used: every method that reaches it is overridden. Given this
        // directory, it creates nothing elsewhere.
        super.init(memoryCapacity: 0, diskCapacity: 0, diskPath: directory.path)
    }

    /// Whether the cache's folder or file was found not to be the user's alone (or to hold another
    /// database): it then keeps no entries. Looks at the files first when no call has yet.
    var isRefused: Bool {
        database.withLock { $0.isRefused }
    }

    /// The one sentence saying why the files are not used (refused, or kept in memory because the
    /// folder cannot be made), to the first caller only; nil afterwards and when they are used.
    func takeWarning() -> String? {
        takeFileState().warning
    }

    /// `isRefused` and `takeWarning()` in one acquisition of the lock, as an operation asks before its lookup.
    func takeFileState() -> (isRefused: Bool, warning: String?) {
        database.withLock { database in
            // Looks at the files first when no call has yet, so the first caller learns of a refusal.
            let refused = database.isRefused
            guard !database.warningTaken, let reason = database.reason else { return (refused, nil) }
            database.warningTaken = true
            return (refused, reason)
        }
    }

    /// Looks at the folder and the file now, and throws the reason they are not used (refused, or
    /// only in memory) as an error whose description is one sentence naming the path. Does not count
    /// as taking the warning.
    @_spi(Tool) public func checkFiles() throws {
        let reason = database.withLock { database -> String? in
            _ = database.isRefused
            return database.unavailable?.failure ?? database.reason
        }
        if let reason {
            throw CacheFilesNotUsed(description: reason)
        }
    }

    /// How many rows were read whole, bodies included (the size check reads none).
    var rowsReadWhole: Int {
        database.withLock { $0.rowsReadWhole }
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
        let found = database.withLock { database -> [SQLiteValue]? in
            let capacity = database.diskCapacity
            let row = database.use { connection in
                try connection.transaction { () -> [SQLiteValue]? in
                    guard try Self.fits(key: key, capacity: capacity, in: connection) else { return nil }
                    let rows = try connection.run("""
                        SELECT response_url, status, header_fields, body, metadata, checksum FROM entries WHERE key = ?
                        """, [.text(key)])
                    guard let row = rows.first else { return nil }
                    try connection.run("UPDATE entries SET accessed_at = ? WHERE key = ?", [Self.now(), .text(key)])
                    return row
                }
            } ?? nil
            if row != nil {
                database.rowsReadWhole += 1
            }
            return row
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

/// The reason `SQLiteURLCache.checkFiles()` gives: the files are not used.
struct CacheFilesNotUsed: Error, CustomStringConvertible {
    let description: String
}
