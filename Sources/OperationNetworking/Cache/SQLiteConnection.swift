import CSQLite
import Foundation

/// A value bound to, or read from, an SQLite statement.
enum SQLiteValue: Equatable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
    case null
}

/// An SQLite result code other than success, with the connection's message.
struct SQLiteError: Error, CustomStringConvertible {
    /// The extended result code.
    let code: Int32
    let message: String

    /// Whether another connection (another process) held a lock past the busy timeout.
    var isBusy: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_BUSY || primary == SQLITE_LOCKED
    }

    /// Whether the code says the file is damaged or not a database at all: the only errors for which
    /// the cache replaces a file. Any other (no descriptor left, a lock held past the timeout, a file
    /// it may not read) fails that one call, and the next tries again.
    var isDamage: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
    }

    var description: String { "SQLite error \(code): \(message)" }
}

/// One SQLite connection, closed on deinit.
///
/// - Threading: none of its own; one thread at a time (SQLiteURLCache uses it under its lock).
final class SQLiteConnection {
    private let handle: OpaquePointer
    /// Statements prepared once and reused, by their SQL: the cache runs the same few statements for
    /// every entry, and preparing one costs more than running it.
    private var prepared: [String: OpaquePointer] = [:]

    /// Opens (creating if needed) the database at `path`, or a private in-memory one for ":memory:".
    /// With `followingNoLink`, a symbolic link at `path` is not opened (`SQLITE_OPEN_NOFOLLOW`) and the
    /// schema is not trusted (`PRAGMA trusted_schema = OFF`: functions with side effects in a view or a
    /// trigger of the file are not run). Throws `SQLiteError` when SQLite cannot open it.
    init(path: String, busyTimeoutMilliseconds: Int32, followingNoLink: Bool = false) throws {
        var opened: OpaquePointer?
        var flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        if followingNoLink {
            flags |= SQLITE_OPEN_NOFOLLOW
        }
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard let opened else { throw SQLiteError(code: code, message: "out of memory") }
        guard code == SQLITE_OK else {
            let error = SQLiteError(code: sqlite3_extended_errcode(opened), message: String(cString: sqlite3_errmsg(opened)))
            sqlite3_close_v2(opened)
            throw error
        }
        handle = opened
        sqlite3_extended_result_codes(handle, 1)
        // How long a statement waits for another connection's lock before it fails with `SQLITE_BUSY`
        // (the cache gives 0: it never waits while it holds its own lock).
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
        if followingNoLink {
            try run("PRAGMA trusted_schema = OFF")
        }
    }

    deinit {
        for statement in prepared.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs `sql` with `bindings` for its `?` parameters, and returns every row it gives. The statement
    /// is prepared the first time and kept (reset and its bindings cleared after each run).
    @discardableResult
    func run(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> [[SQLiteValue]] {
        let statement = try statement(for: sql)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in bindings.enumerated() {
            guard bind(value, at: Int32(index + 1), in: statement) == SQLITE_OK else { throw lastError() }
        }
        var rows: [[SQLiteValue]] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                rows.append((0..<sqlite3_column_count(statement)).map { column(at: $0, in: statement) })
            case SQLITE_DONE:
                return rows
            default:
                throw lastError()
            }
        }
    }

    /// The statement for `sql`, prepared now or before.
    private func statement(for sql: String) throws -> OpaquePointer {
        if let statement = prepared[sql] { return statement }
        var made: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &made, nil) == SQLITE_OK, let statement = made else {
            sqlite3_finalize(made)
            throw lastError()
        }
        prepared[sql] = statement
        return statement
    }

    /// The bytes the text or blob in `column` of the row `rowid` of `table` takes, read from the row's
    /// header through an incremental-blob handle, which reads none of the value itself.
    func storedBytes(table: String, column: String, rowid: Int64) throws -> Int {
        var blob: OpaquePointer?
        guard sqlite3_blob_open(handle, "main", table, column, rowid, 0, &blob) == SQLITE_OK, let blob else {
            sqlite3_blob_close(blob)
            throw lastError()
        }
        defer { sqlite3_blob_close(blob) }
        return Int(sqlite3_blob_bytes(blob))
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<Result>(_ body: () throws -> Result) throws -> Result {
        try run("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            _ = try? run("ROLLBACK")
            throw error
        }
    }

    private func lastError() -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }

    private func bind(_ value: SQLiteValue, at index: Int32, in statement: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let integer):
            return sqlite3_bind_int64(statement, index, integer)
        case .real(let real):
            return sqlite3_bind_double(statement, index, real)
        case .text(let text):
            return sqlite3_bind_text(statement, index, text, -1, sqliteTransient)
        case .blob(let data) where data.isEmpty:
            // An empty blob, not NULL (a zero-length pointer binds NULL).
            return sqlite3_bind_zeroblob(statement, index, 0)
        case .blob(let data):
            return data.withUnsafeBytes { bytes in
                sqlite3_bind_blob64(statement, index, bytes.baseAddress, UInt64(bytes.count), sqliteTransient)
            }
        case .null:
            return sqlite3_bind_null(statement, index)
        }
    }

    private func column(at index: Int32, in statement: OpaquePointer) -> SQLiteValue {
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            return .text(String(cString: text))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, index))
            guard let bytes = sqlite3_column_blob(statement, index), count > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default:
            return .null
        }
    }
}

/// SQLite's `SQLITE_TRANSIENT` (a macro Swift does not import): SQLite copies the bound bytes before
/// the call returns, so a Swift buffer only valid during the call can be bound.
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Another process holding the cache's file: SQLite's busy timeout is 0 on the cache's connection, so a
/// statement that meets the lock fails at once and the file's lock is released; the read is tried again
/// after a short pause taken with no lock held, for at most `busyTimeoutMilliseconds` in all. Lookups of
/// this process therefore wait for the peer side by side, never one behind the other's wait.
extension SQLiteURLCache {
    /// How long the file is left alone, in nanoseconds, after a read met another process's lock for
    /// `busyTimeoutMilliseconds`: lookups meanwhile answer from memory or miss at once, so that one
    /// lookup a second waits for the file, not every one.
    static let busyBackoff: UInt64 = 1_000_000_000

    /// The pauses between tries of a read that met another process's lock, in milliseconds (the last one
    /// repeats): short at first, as SQLite's own busy handler makes them, for a peer's lock is most
    /// often held for one short statement.
    private static let busyPauses: [UInt64] = [1, 2, 5, 10, 15, 20, 25]

    /// Whether a read met another process's lock less than `busyBackoff` ago.
    func fileIsBusy(now: UInt64) -> Bool {
        entries.withLock { now < $0.fileBusyUntil }
    }

    /// A read met another process's lock past the wait: the file is left alone for `busyBackoff`.
    private func noteFileBusy() {
        let now = monotonicNow()
        entries.withLock { $0.fileBusyUntil = now &+ SQLiteURLCache.busyBackoff }
    }

    /// Runs `attempt`, one hold of the file's lock that says whether another process held the file
    /// (`busy`), until it does not, for at most `busyTimeoutMilliseconds`; between tries it pauses with
    /// no lock held. A read that stays busy counts in `readsFoundBusy` and leaves the file alone for
    /// `busyBackoff`; one that another read gave up for meanwhile stops at once. Returns the last try's
    /// result.
    func retryingWhileBusy<Result>(_ attempt: () -> (result: Result, busy: Bool)) -> Result {
        let start = monotonicNow()
        let budget = UInt64(SQLiteURLCache.busyTimeoutMilliseconds) * 1_000_000
        var tries = 0
        while true {
            let (result, busy) = attempt()
            guard busy else { return result }
            let now = monotonicNow()
            if fileIsBusy(now: now) { return result }   // another read gave up on the file meanwhile
            let elapsed = now &- start
            guard elapsed < budget else {
                database.withLock { $0.readsFoundBusy += 1 }
                noteFileBusy()
                return result
            }
            let pause = min(SQLiteURLCache.busyPauses[min(tries, SQLiteURLCache.busyPauses.count - 1)] * 1_000_000,
                            budget - elapsed)
            tries += 1
            Thread.sleep(forTimeInterval: Double(pause) / 1e9)
        }
    }
}
