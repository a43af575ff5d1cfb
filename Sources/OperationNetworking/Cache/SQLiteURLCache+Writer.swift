import Dispatch
import Foundation

extension SQLiteURLCache {
    /// How long a change waits before it is written, so that the changes of a burst go in one
    /// transaction (the newest change of a key replacing the older ones) instead of one each.
    static let writeDelay: DispatchTimeInterval = .milliseconds(50)

    /// How long a batch that met another process's lock on the file waits before it is tried again.
    static let retryDelay: DispatchTimeInterval = .milliseconds(200)

    /// Schedules a write of what is pending, once: called after a change, with the memory lock released.
    func scheduleWrite(after delay: DispatchTimeInterval = SQLiteURLCache.writeDelay) {
        let first = entries.withLock { entries -> Bool in
            defer { entries.writeScheduled = true }
            return !entries.writeScheduled
        }
        guard first else { return }
        // Weakly: a cache nobody holds any more is written by its `deinit` at once, not after the delay.
        writer.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, !writePending() else { return }
            scheduleWrite(after: SQLiteURLCache.retryDelay)
        }
    }

    /// Writes what is pending now, and waits for it: the tests, `deinit` and the end of the process
    /// call it so that nothing stored is lost, and `onet request -v` before it says what the cache did.
    @_spi(Tool) public func flush() {
        writer.sync { _ = writePending() }
    }

    /// Writes the pending changes in one transaction. False when another process held the file past
    /// the wait: the changes stay pending (readers still see them in memory) and are tried again.
    /// Runs on `writer`, or in `deinit`; takes the memory lock and the file's lock one after the other,
    /// never both at once.
    @discardableResult
    func writePending() -> Bool {
        let batch = entries.withLock { entries -> Entries.Batch? in
            entries.writeScheduled = false
            guard entries.hasChanges else { return nil }
            entries.batchesTried += 1
            return entries.takeBatch()
        }
        guard let batch else { return true }
        let rows = batch.changes.map { change -> (String, [SQLiteValue]?) in
            guard case .store(let entry) = change.write, let row = try? StoredRow(entry), let values = try? row.values
            else { return (change.key, nil) }
            return (change.key, values + [.integer(StoredRow.checksum(key: change.key, values: values)),
                                          .integer(Int64(entry.size)), .real(entry.storedAt), .real(entry.storedAt)])
        }
        var failure: Error?
        let outcome = database.withLock { database in
            database.useTellingBusy { connection in
                // The batch never waits for another process's lock while it holds the file's: lookups
                // that need the file would wait behind it. Busy at once, it is tried again later.
                connection.setBusyTimeout(milliseconds: 0)
                defer { connection.setBusyTimeout(milliseconds: SQLiteURLCache.busyTimeoutMilliseconds) }
                do {
                    try SQLiteURLCache.write(batch, rows: rows, on: connection)
                } catch {
                    failure = error
                    throw error
                }
            }
        }
        // Another process's lock: tried again later. Any other failure (a refused or full file): the
        // batch is dropped, as a store that failed at once would be; its keys read as absent from now on,
        // its stores are reported not written, and the next operation through the cache tells why.
        let reports = entries.withLock { entries -> [(WriteReport, Bool)] in
            if outcome.busy {
                entries.notWritten(batch)
                return []
            }
            let stored = outcome.result != nil
            if !stored, !batch.changes.isEmpty {
                entries.writeFailure = "\(batch.changes.count) changes were not written to the cache's file: "
                    + (failure.map { "\($0)" } ?? "the file could not be used")
            }
            return entries.written(batch, stored: stored)
        }
        for (report, written) in reports { report(written) }
        return !outcome.busy
    }

    /// Writes `batch` (its stores as `rows`) in one transaction.
    private static func write(_ batch: Entries.Batch, rows: [(String, [SQLiteValue]?)], on connection: SQLiteConnection) throws {
        try connection.transaction {
            if batch.clearAll { try connection.run("DELETE FROM entries") }
            if let since = batch.clearSince {
                try connection.run("DELETE FROM entries WHERE stored_at > ?", [.real(since)])
            }
            for (key, values) in rows {
                if let values {
                    try connection.run("""
                        INSERT OR REPLACE INTO entries
                            (key, response_url, status, header_fields, body, metadata, checksum, size,
                             stored_at, accessed_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, [.text(key)] + values)
                } else {
                    try connection.run("DELETE FROM entries WHERE key = ?", [.text(key)])
                }
            }
            for (key, accessed) in batch.touched {
                try connection.run("UPDATE entries SET accessed_at = ? WHERE key = ?", [.real(accessed), .text(key)])
            }
        }
    }
}
