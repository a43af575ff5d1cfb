import Dispatch
import Foundation

extension SQLiteURLCache {
    /// How long a change waits before it is written, so that the changes of a burst go in one
    /// transaction (the newest change of a key replacing the older ones) instead of one each.
    static let writeDelay: DispatchTimeInterval = .milliseconds(50)

    /// How long a batch that met another process's lock on the file waits before it is tried again.
    static let retryDelay: DispatchTimeInterval = .milliseconds(200)

    /// Writes what is pending now, and waits for it: the tests call it, and `onet request -v` before it
    /// says what the cache did (`deinit` and the end of the process do the same through the writer).
    @_spi(Tool) public func flush() {
        writer.flush()
    }

    /// `cache` when it is the library's store, which every lookup asks (for `EntryStore` and
    /// `CacheFileWarnings`, whose one conformer this class is). Asked of the class, not of the
    /// protocols: a cast to a final class compares one pointer, a conformance query searches the
    /// runtime's tables on every call (bench/runs/cache-2026-12-08-round10.md).
    static func library(_ cache: URLCache) -> SQLiteURLCache? {
        cache as? SQLiteURLCache
    }

    /// What writes a cache's changes to its file, in batches, on a serial queue of its own.
    ///
    /// An object apart from the cache, so that the references that must not keep the cache alive (a
    /// scheduled write and the list of what is written at exit, both weak) point here instead. The
    /// cache then has no weak reference, so no side table: every request retains and releases the
    /// cache, and an object with a side table takes the slow path of both (`SQLiteURLCacheTests` guards
    /// this). The writer is retained only when a write is scheduled or runs.
    /// - Threading: any thread. Checked by hand, as the cache is: its state is the cache's `entries` and
    ///   `database`, each reached only under its lock, and its queue.
    final class Writer: @unchecked Sendable {
        let entries: Protected<Entries>
        let database: Protected<Database>
        /// Where the batches are written, one at a time.
        private let queue = DispatchQueue(label: "org.operationnetworking.cache-writer", qos: .utility)
        /// Tells `close()` whether it runs on `queue` (where waiting for the queue would never end).
        private static let queueKey = DispatchSpecificKey<ObjectIdentifier>()

        init(entries: Protected<Entries>, database: Protected<Database>) {
            self.entries = entries
            self.database = database
            queue.setSpecific(key: Writer.queueKey, value: ObjectIdentifier(self))
            Writer.writeAtExit(self)
        }

        /// Schedules a write of what is pending, once: called after a change, with the memory lock released.
        func scheduleWrite(after delay: DispatchTimeInterval = SQLiteURLCache.writeDelay) {
            let first = entries.withLock { entries -> Bool in
                defer { entries.writeScheduled = true }
                return !entries.writeScheduled
            }
            guard first else { return }
            // Weakly, and the writer, never the cache: a cache nobody holds any more is written at once
            // by its `deinit` (`close()`), and its file is closed as it goes (the writer with it).
            queue.asyncAfter(deadline: .now() + delay) { [weak self] in
                guard let self, !writePending() else { return }
                scheduleWrite(after: SQLiteURLCache.retryDelay)
            }
        }

        /// Writes what is pending now, after any batch under way, and waits for it.
        func flush() {
            queue.sync { _ = writePending() }
        }

        /// The cache is gone: writes what is pending now (after a batch under way, unless this is that
        /// batch's queue: the last release of the cache can come from a write's report) and leaves the
        /// list of what is written at exit.
        func close() {
            if DispatchQueue.getSpecific(key: Writer.queueKey) == ObjectIdentifier(self) {
                writePending()
            } else {
                flush()
            }
            Writer.alive.withLock { $0[ObjectIdentifier(self)] = nil }
        }

        /// Writes the pending changes in one transaction. False when another process held the file: the
        /// changes stay pending (readers still see them in memory) and are tried again.
        /// Runs on `queue`; takes the memory lock and the file's lock one after the other, never both at once.
        @discardableResult
        private func writePending() -> Bool {
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
                    // The batch never waits for another process's lock while it holds the file's (the
                    // connection's busy timeout is 0): busy at once, it is tried again later.
                    do {
                        try Writer.write(batch, rows: rows, on: connection)
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

        // MARK: - The end of the process

        /// The writers of the caches alive in the process, written when it ends (`exit`, or `main`
        /// returning) so that a store made just before is not lost. Weakly: the cache holds its writer,
        /// and its `deinit` takes the writer out.
        private static let alive = Protected<[ObjectIdentifier: AliveWriter]>([:])

        /// A writer known to `alive`, without keeping it alive (a weak reference, which LeakSanitizer
        /// also follows to the side table a weak reference gives its object).
        /// - Threading: a value; kept in `alive` and read only under its lock.
        private struct AliveWriter: Sendable {
            weak var writer: Writer?
        }

        /// The handler that writes every alive writer's changes at exit, installed once.
        private static let exitHandler: Void = {
            atexit {
                let writers = Writer.alive.withLock { $0.values.compactMap(\.writer) }
                for writer in writers { writer.flush() }
            }
        }()

        /// Registers `writer` to be written at exit.
        private static func writeAtExit(_ writer: Writer) {
            _ = exitHandler
            alive.withLock { alive in
                alive = alive.filter { $0.value.writer != nil }
                alive[ObjectIdentifier(writer)] = AliveWriter(writer: writer)
            }
        }
    }
}
