import Foundation

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
