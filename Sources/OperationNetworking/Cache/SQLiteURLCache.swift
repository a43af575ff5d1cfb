import CSQLite
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `URLCache` whose entries live in one SQLite database file, the library's default shared cache.
///
/// corelibs' own disk cache keys an entry by host, port and path (the query is dropped), lists the whole
/// directory on every call, and stops the process on some damaged files. This one keys an entry by its
/// full URL (`CacheEntryMetadata.key(for:)`: no fragment, scheme and host lowercased), and reads every
/// value with Swift code that treats damage as a miss:
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
/// **Memory and file.** The keys the file holds, their sizes and recency are read once, at first use,
/// and kept in memory; so are the most recently used entries themselves, decoded, up to
/// `memoryCapacity` (`currentMemoryUsage` counts them). A lookup of a key the file does not hold, or
/// whose entry is in memory, never touches the file; a hit writes nothing (its recency is written
/// later). Stores and removals take effect in memory at once and are written to the file after
/// `writeDelay`, in one transaction for all changes made meanwhile (the newest change of a key wins),
/// on a queue of the cache's own — never on the request's path; `deinit` and the end of the process
/// write what is left. After each store, the least recently used entries are removed while the
/// entries take more than `diskCapacity` bytes (down to nine tenths of it). When the directory cannot be
/// used at all, the entries are kept in an in-memory database for the life of the cache instead.
///
/// **Several processes** may share the file (SQLite's WAL mode: readers never wait for a writer;
/// `synchronous = NORMAL`, so a commit does not wait for the disk, and a power loss may lose the last
/// changes, never the file). Each process keeps its own memory: what another one stores or removes is
/// seen once this one checks the file's version, at most about a second later. A lock another process
/// holds, for however long, delays a lookup by at most `busyTimeoutMilliseconds` (100 ms; the lookup
/// is then a miss, and the request goes to the network): its read is tried again after short pauses
/// taken with no lock held, so lookups at the same time wait side by side, never one behind another's
/// wait; for the next `busyBackoff` (a second) lookups leave the file alone, answering from memory or
/// missing at once. A batch of writes never waits for the lock: it is tried again 0.2 s later,
/// its changes answering from memory meanwhile. A store is reported written (`CacheStatus.stored`) once
/// its batch is; a batch that fails for good (a full disk) drops its stores, and `takeWriteFailure()`
/// says why to the next operation.
///
/// - Threading: any thread. The memory lock and the file's lock are never held together, nor while
///   code outside this type runs; the file's lock is held through a statement or one batch's
///   transaction, never through a wait for another process (SQLite's busy timeout is 0: see
///   `retryingWhileBusy`).
/// - Visibility: not part of the library's public API; `onet`'s `--cache-dir` reaches it
///   through `@_spi(Tool)`, so the tool's cache is the same store the library defaults to.
@_spi(Tool) public final class SQLiteURLCache: URLCache, CacheFileWarnings, @unchecked Sendable {
    /// The database's file name inside the cache's directory.
    static let fileName = "cache.sqlite3"

    /// How long a read tries again while another process holds a lock on the file before it gives up,
    /// never holding the file's lock meanwhile (a batch of writes does not wait at all).
    static let busyTimeoutMilliseconds: Int32 = 100

    /// The keys, the entries kept in memory and the changes not yet written.
    let entries: Protected<Entries>
    /// The connection to the file.
    let database: Protected<Database>
    /// What writes the changes to the file, one batch at a time, on a queue of its own.
    let writer: Writer

    /// A cache keeping its entries in `directory`/`cache.sqlite3`, the directory created (0700) if
    /// needed. The directory must be the user's alone, and so must its parent when that is the shared
    /// cache's `org.operationnetworking.URLCache` folder (the library owns both levels there).
    @_spi(Tool) public init(memoryCapacity: Int, diskCapacity: Int, directory: URL) {
        let ownedLevels = directory.deletingLastPathComponent().lastPathComponent == SharedCacheLocation.folderName ? 2 : 1
        entries = Protected(Entries(memoryCapacity: memoryCapacity, diskCapacity: diskCapacity))
        database = Protected(Database(directory: directory, ownedLevels: ownedLevels))
        writer = Writer(entries: entries, database: database)
        // corelibs' own store is never used: every method that reaches it is overridden. Given this
        // directory, it creates nothing elsewhere.
        super.init(memoryCapacity: 0, diskCapacity: 0, diskPath: directory.path)
    }

    deinit {
        // What is pending is written now, after a batch under way, and the writer leaves the exit list.
        writer.close()
    }

    /// Whether the cache's folder or file was found not to be the user's alone (or to hold another
    /// database): it then keeps no entries. Looks at the files first when no call has yet.
    var isRefused: Bool {
        takeFileState(marking: false).isRefused
    }

    /// The one sentence saying why the files are not used (refused, or kept in memory because the
    /// folder cannot be made), to the first caller only; nil afterwards and when they are used.
    func takeWarning() -> String? {
        takeFileState().warning
    }

    /// `isRefused` and `takeWarning()` in one acquisition of the lock, as an operation asks before its lookup.
    func takeFileState() -> (isRefused: Bool, warning: String?) {
        takeFileState(marking: true)
    }

    private func takeFileState(marking: Bool) -> (isRefused: Bool, warning: String?) {
        // Once the files were looked at and there is nothing (more) to tell, every lookup asks memory
        // only: the file's lock, which a batch being written holds, stays off the request's path.
        if marking, let settled = entries.withLock({ $0.settledFileState }) { return (settled, nil) }
        let state = retryingWhileBusy { () -> (result: (Bool, String?, settled: Bool), busy: Bool) in
            database.withLock { database in
                // Looks at the files first when no call has yet, so the first caller learns of a refusal.
                let refused = database.isRefused
                let busy = database.openFoundBusy
                guard marking, !database.warningTaken, let reason = database.reason else {
                    return ((refused, nil, database.reason == nil || database.warningTaken), busy)
                }
                database.warningTaken = true
                return ((refused, reason, true), busy)
            }
        }
        if marking && state.settled { entries.withLock { $0.settledFileState = state.0 } }
        return (state.0, state.1)
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

    /// How many batches of changes were taken to be written (each try of one counts).
    var batchesTried: Int {
        entries.withLock { $0.batchesTried }
    }

    /// How many reads of the file met another process's lock through all their tries (each tried for
    /// `busyTimeoutMilliseconds`).
    var readsFoundBusy: Int {
        database.withLock { $0.readsFoundBusy }
    }

    /// The bytes of entries kept decoded in memory (the most recently used ones).
    public override var memoryCapacity: Int {
        get { entries.withLock { $0.memoryCapacity } }
        set { entries.withLock { $0.setMemoryCapacity(newValue) } }
    }

    /// The bytes the entries may take; setting it removes the least recently used ones beyond it.
    public override var diskCapacity: Int {
        get { entries.withLock { $0.diskCapacity } }
        set {
            loadKeysIfNeeded()
            entries.withLock { $0.setDiskCapacity(newValue) }
            writer.scheduleWrite()
        }
    }

    /// The bytes of the entries kept in memory: each as `currentDiskUsage` counts it, plus, for one a
    /// fresh hit may answer, the head kept ready for that answer.
    public override var currentMemoryUsage: Int {
        entries.withLock { $0.memoryUsage }
    }

    /// The bytes the entries take (their keys, URLs, header fields, bodies and metadata), written or
    /// about to be; the file adds SQLite's page overhead to it.
    public override var currentDiskUsage: Int {
        loadKeysIfNeeded()
        return entries.withLock { $0.diskUsage }
    }

    /// The entry for the request's URL (fragment dropped), or `nil`; a damaged row is a miss and is deleted.
    public override func cachedResponse(for request: URLRequest) -> CachedURLResponse? {
        guard let url = request.url else { return nil }
        return entry(forKey: CacheEntryMetadata.key(for: url))?.cachedResponse
    }

    /// Stores an HTTP response under the request's URL, replacing the entry there.
    public override func storeCachedResponse(_ cachedResponse: CachedURLResponse, for request: URLRequest) {
        guard cachedResponse.storagePolicy == .allowed, let url = request.url else { return }
        let key = CacheEntryMetadata.key(for: url)
        guard let entry = Entry(cachedResponse, key: key, storedAt: Date().timeIntervalSinceReferenceDate) else { return }
        store(entry, forKey: key, report: nil)
    }

    /// Deletes the entry for the request's URL, if any.
    public override func removeCachedResponse(for request: URLRequest) {
        guard let url = request.url else { return }
        removeEntry(forKey: CacheEntryMetadata.key(for: url))
    }

    /// Deletes every entry.
    public override func removeAllCachedResponses() {
        entries.withLock { $0.removeAll() }
        writer.scheduleWrite()
    }

    /// Deletes the entries stored after `date`.
    public override func removeCachedResponses(since date: Date) {
        loadKeysIfNeeded()
        entries.withLock { $0.removeStored(since: date.timeIntervalSinceReferenceDate) }
        writer.scheduleWrite()
    }
}

// MARK: - Entries by key (what `CacheStorage` uses, without `CachedURLResponse`'s JSON `userInfo`)

extension SQLiteURLCache: EntryStore {
    /// The entry stored under `key`: from memory when it is there, else from the file; nil on a miss.
    func entry(forKey key: String) -> Entry? {
        loadKeysIfNeeded()
        let now = Date().timeIntervalSinceReferenceDate
        let (found, number) = entries.withLock { ($0.lookUp(key, now: now), $0.changeNumber) }
        switch found {
        case .entry(let entry):
            return entry
        case .absent:
            return nil
        case .inFile:
            // Another process held the file a moment ago: a miss, and the key stays (it is still there).
            guard !fileIsBusy(now: monotonicNow()) else { return nil }
            switch readFromFile(key) {
            case .entry(let entry):
                entries.withLock { $0.keepRead(entry, for: key, readSince: number) }
                return entry
            case .absent:
                entries.withLock { $0.forget(key) }
                return nil
            case .busy:
                return nil
            }
        }
    }

    /// Stores `entry` under `key`: in memory now, in the file with the next batch; `report` is told
    /// whether that batch wrote it (false at once when the files are refused).
    func store(_ entry: Entry, forKey key: String, report: WriteReport?) {
        loadKeysIfNeeded()
        let now = Date().timeIntervalSinceReferenceDate
        switch entries.withLock({ $0.store(entry, for: key, now: now, report: report) }) {
        case .refused: report?(false)
        case .stored: writer.scheduleWrite()
        case .repeated(let written): if written { report?(true) }
        }
    }

    /// Keeps the entry under `key` as it is, used now, if it is the one stored at `storedAt`: a response
    /// only repeats it: `.stored` when it is in the file, `.pending` when it waits for a batch (the
    /// report `makeReport` made is told then). `nil` when another entry or none is there (the response
    /// is then stored).
    func keepRepeated(forKey key: String, storedAt: Double,
                      makeReport: () -> WriteReport?) -> CacheStorage.StoreOutcome? {
        loadKeysIfNeeded()
        let now = Date().timeIntervalSinceReferenceDate
        switch entries.withLock({ $0.keepRepeated(key, storedAt: storedAt, now: now, makeReport: makeReport) }) {
        case nil: return nil
        case .repeated(let written)?: return written ? .stored : .pending
        case .refused?, .stored?: return .pending
        }
    }

    /// Why the last batch that failed for good failed, to the first caller after it (an operation's
    /// lookup, for `LoggingEventMonitor`); nil otherwise.
    func takeWriteFailure() -> String? {
        entries.withLock { entries in
            defer { entries.writeFailure = nil }
            return entries.writeFailure
        }
    }

    /// Removes the entry under `key`: from memory now, from the file with the next batch. The keys are
    /// read first, once, so that a removal of a key the file does not hold (a POST's invalidation of its
    /// URL, most often) writes nothing.
    func removeEntry(forKey key: String) {
        loadKeysIfNeeded()
        if entries.withLock({ $0.removeIfHeld(key) }) { writer.scheduleWrite() }
    }

    /// Removes the entry under `key` if it is still the one stored at `storedAt`.
    func removeEntry(forKey key: String, ifStoredAt storedAt: Double) {
        let removed = entries.withLock { $0.remove(key, ifStoredAt: storedAt) }
        if removed { writer.scheduleWrite() }
    }
}
/// The reason `SQLiteURLCache.checkFiles()` gives: the files are not used.
struct CacheFilesNotUsed: Error, CustomStringConvertible {
    let description: String
}
