import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SQLiteURLCache {
    /// The cache's state in memory: which keys the file holds and their sizes and recency (read once from
    /// the file, then kept up to date here), the most recently used entries themselves up to
    /// `memoryCapacity`, and the changes not yet written. Every lookup and store is decided here, under
    /// the cache's memory lock; only a key whose entry is not in memory is read from the file, and the
    /// writes go to the file later, in batches (`SQLiteURLCache.swift`).
    ///
    /// - Threading: a value owned by the cache's `Protected` lock; no I/O here.
    struct Entries {
        var memoryCapacity: Int
        var diskCapacity: Int
        /// Whether `slots` holds what the file holds: false until the keys were read from it.
        var isLoaded = false
        /// Whether the cache's files are refused: then nothing is kept, in memory either.
        private(set) var isRefused = false
        private(set) var slots: [String: Slot] = [:]
        /// The bytes the slots take, kept as they change (no sum over the file).
        private(set) var diskUsage = 0
        /// The bytes of the entries memory keeps (`Slot.kept`).
        private(set) var memoryUsage = 0
        /// The slots' keys and the kept entries' keys, least recently used first: eviction takes from
        /// their fronts instead of sorting every key.
        private var slotOrder = RecencyOrder<String>()
        private var keptOrder = RecencyOrder<String>()
        /// Changes not yet in the file, each with the number it was made under: a write that finishes
        /// takes out only the changes it wrote, not newer ones made meanwhile.
        private(set) var pending: [String: (write: PendingWrite, number: UInt64)] = [:]
        /// The keys whose recency is not yet in the file (`Slot.accessUnwritten`), each once.
        private var touchedKeys: [String] = []
        /// Everything in the file goes first (`removeAllCachedResponses`), or what was stored after this time.
        private(set) var clearAll = false
        private(set) var clearSince: Double?
        private var changeCounter: UInt64 = 0
        /// Whether a write of the pending changes is scheduled on the cache's writer queue.
        var writeScheduled = false
        /// Whether the files are refused, once that is decided and told (`takeFileState`): a later
        /// fallback to memory (a damaged file that cannot be made again) is then not told again.
        var settledFileState: Bool?
        /// When the file's version was last compared (`monotonicNow()`).
        var lastVersionCheck: UInt64 = 0
        /// Until when (`monotonicNow()`) the file is left alone: a read met another process's lock.
        var fileBusyUntil: UInt64 = 0
        /// How many batches were taken to be written, for the tests of a busy file.
        var batchesTried = 0
        /// The reports waiting for stores to be written, by the number of the change that stored.
        private var reports: [UInt64: WriteReport] = [:]
        /// Why the last batch that failed for good failed, until an operation takes it to tell it.
        var writeFailure: String?

        init(memoryCapacity: Int, diskCapacity: Int) {
            self.memoryCapacity = memoryCapacity
            self.diskCapacity = diskCapacity
        }

        // MARK: - Reading

        /// Looks `key` up, noting it as used now.
        mutating func lookUp(_ key: String, now: Double) -> Lookup {
            guard !isRefused else { return .absent }
            if let (write, _) = pending[key] {
                guard case .store(let entry) = write else { return .absent }
                touch(key, now: now)
                return .entry(entry)
            }
            guard let index = slots.index(forKey: key) else { return isLoaded ? .absent : .inFile }
            if let kept = slots.values[index].kept {
                touch(at: index, now: now)
                return .entry(kept.entry)
            }
            guard isLoaded else { return .inFile }
            touch(at: index, now: now)
            return .inFile
        }

        /// Notes `key` as used now.
        private mutating func touch(_ key: String, now: Double) {
            if let index = slots.index(forKey: key) { touch(at: index, now: now) }
        }

        /// Notes the slot at `index` as used now, changed in place through `values` (`slots[key]?… = …`
        /// would hash the key again).
        private mutating func touch(at index: Dictionary<String, Slot>.Index, now: Double) {
            if let place = slots.values[index].kept?.place { keptOrder.use(place) }
            slots.values[index].accessedAt = now
            slotOrder.use(slots.values[index].place)
            if !slots.values[index].accessUnwritten {
                slots.values[index].accessUnwritten = true
                touchedKeys.append(slots.keys[index])
            }
        }

        /// The entry memory keeps for `key`, if any.
        func keptEntry(for key: String) -> Entry? {
            slots[key]?.kept?.entry
        }

        /// An entry read from the file for `key` is kept in memory, if it fits and nothing changed since
        /// the read began (`number`: `changeNumber` then; a change meanwhile may have replaced or removed it).
        mutating func keepRead(_ entry: Entry, for key: String, readSince number: UInt64) {
            guard changeCounter == number, slots[key] != nil else { return }
            keep(entry, for: key)
        }

        /// The counter of changes, for `keepRead`.
        var changeNumber: UInt64 { changeCounter }

        // MARK: - Changing

        /// Stores `entry` under `key` in memory, to be written, `report` to be told whether it was; then
        /// evicts the least recently used entries while the entries take more than `diskCapacity`. An
        /// entry that only repeats the one memory holds for the key leaves it in place (an entry only in
        /// the file is not read to compare).
        @discardableResult
        mutating func store(_ entry: Entry, for key: String, now: Double, report: WriteReport? = nil) -> StoreOutcome {
            guard !isRefused else { return .refused }
            if let current = entryInMemory(key), entry.repeatsWithoutTime(current.entry) {
                if current.entry.head == nil, let head = entry.head { attach(head, to: key) }
                touch(key, now: now)
                guard let number = current.pendingNumber else { return .repeated(written: true) }
                chain(report, to: number)
                return .repeated(written: false)
            }
            drop(key)
            changeCounter += 1
            pending[key] = (.store(entry), changeCounter)
            if let report { reports[changeCounter] = report }
            slots[key] = Slot(size: entry.size, accessedAt: now, storedAt: entry.storedAt, place: slotOrder.append(key))
            diskUsage += entry.size
            keep(entry, for: key)
            evict(toFit: diskCapacity)
            return .stored
        }

        /// Keeps the entry under `key` as it is, used now, if it is the one stored at `storedAt` (a
        /// response only repeats it, `CacheState.Repeat`), in memory or in the file alone (it is not read
        /// to be compared: the run that found it compared it). `nil` when another entry or none is
        /// there. Only when the entry is pending is a report made (`makeReport`), to wait for its write as
        /// `store`'s does: one in the file already needs none.
        mutating func keepRepeated(_ key: String, storedAt: Double, now: Double,
                                   makeReport: () -> WriteReport?) -> StoreOutcome? {
            guard !isRefused else { return nil }
            if let (write, number) = pending[key] {
                guard case .store(let entry) = write, entry.storedAt == storedAt else { return nil }
                touch(key, now: now)
                chain(makeReport(), to: number)
                return .repeated(written: false)
            }
            guard isLoaded, let slot = slots.index(forKey: key), slots.values[slot].storedAt == storedAt else { return nil }
            touch(at: slot, now: now)
            return .repeated(written: true)
        }

        /// `report` is told, after the reports already waiting, what the write of change `number` did.
        private mutating func chain(_ report: WriteReport?, to number: UInt64) {
            guard let report else { return }
            let earlier = reports[number]
            reports[number] = { written in
                earlier?(written)
                report(written)
            }
        }

        /// The entry under `key` in memory now has `head`, which repeated it (`Entry.head`): a later
        /// response is compared with it as bytes.
        private mutating func attach(_ head: ResponseHead, to key: String) {
            if let (write, number) = pending[key], case .store(let entry) = write {
                pending[key] = (.store(entry.with(head: head)), number)
            }
            if let index = slots.index(forKey: key), let kept = slots.values[index].kept {
                slots.values[index].kept = Kept(entry: kept.entry.with(head: head), place: kept.place)
            }
        }

        /// The entry under `key` if memory holds it, with the number of its change when it waits to be
        /// written.
        private func entryInMemory(_ key: String) -> (entry: Entry, pendingNumber: UInt64?)? {
            if let (write, number) = pending[key] {
                guard case .store(let entry) = write else { return nil }
                return (entry, number)
            }
            return keptEntry(for: key).map { ($0, nil) }
        }

        /// Removes `key`'s entry as `remove` does; false, changing nothing, when it is known that there
        /// is none: the keys were read and neither the file nor a pending change holds it (a successful
        /// POST invalidates its URL, most often one nothing was stored for: no write follows).
        mutating func removeIfHeld(_ key: String) -> Bool {
            if isLoaded, slots[key] == nil, pending[key] == nil { return false }
            remove(key)
            return true
        }

        /// Removes `key`'s entry, in memory and (once written) in the file.
        mutating func remove(_ key: String) {
            drop(key)
            changeCounter += 1
            pending[key] = (.remove, changeCounter)
        }

        /// The files are refused: nothing is kept from now on.
        mutating func refuse() {
            removeAll()
            clearAll = false
            isRefused = true
            isLoaded = true
        }

        /// Removes `key`'s entry if it is still the one stored at `storedAt`; whether it did.
        mutating func remove(_ key: String, ifStoredAt storedAt: Double) -> Bool {
            guard let slot = slots[key], slot.storedAt == storedAt else { return false }
            remove(key)
            return true
        }

        /// Removes every entry.
        mutating func removeAll() {
            slots = [:]
            slotOrder.removeAll()
            keptOrder.removeAll()
            pending = [:]
            touchedKeys = []
            diskUsage = 0
            memoryUsage = 0
            clearAll = true
            clearSince = nil
        }

        /// Removes the entries stored after `date`.
        mutating func removeStored(since date: Double) {
            for (key, slot) in slots where slot.storedAt > date { drop(key) }
            for (key, change) in pending {
                if case .store(let entry) = change.write, entry.storedAt > date { pending[key] = nil }
            }
            clearSince = min(clearSince ?? date, date)
        }

        /// Sets the disk capacity and evicts beyond it.
        mutating func setDiskCapacity(_ capacity: Int) {
            diskCapacity = capacity
            evict(toFit: capacity)
        }

        /// Sets the memory capacity and lets go of what no longer fits.
        mutating func setMemoryCapacity(_ capacity: Int) {
            memoryCapacity = capacity
            trimMemory()
        }

        /// The keys the file holds, read from it: the slots become what it says (changes not yet written
        /// stay on top of it), and what memory kept of keys changed by someone else is let go.
        mutating func load(_ rows: [(key: String, slot: Slot)]) {
            let waiting = pending
            // Uses not yet written stay to be written (the file's recency is older).
            let unwritten = unwrittenAccesses()
            slots = [:]
            touchedKeys = []
            slotOrder.removeAll()
            keptOrder.removeAll()
            memoryUsage = 0
            diskUsage = 0
            var found = rows.filter { waiting[$0.key] == nil && !clearAll && $0.slot.storedAt <= clearSince ?? .infinity }
            var waitingEntries: [(key: String, entry: Entry)] = []
            for (key, change) in waiting {
                guard case .store(let entry) = change.write else { continue }
                found.append((key, Slot(size: entry.size, accessedAt: entry.storedAt, storedAt: entry.storedAt)))
                waitingEntries.append((key, entry))
            }
            for index in found.indices {
                guard let accessed = unwritten[found[index].key] else { continue }
                found[index].slot.accessedAt = max(found[index].slot.accessedAt, accessed)
                found[index].slot.accessUnwritten = true
                touchedKeys.append(found[index].key)
            }
            // The order of use, rebuilt once from the recency the file kept.
            for (key, var slot) in found.sorted(by: { $0.slot.accessedAt < $1.slot.accessedAt }) {
                slot.place = slotOrder.append(key)
                slot.kept = nil
                slots[key] = slot
                diskUsage += slot.size
            }
            for (key, entry) in waitingEntries { keep(entry, for: key) }
            isLoaded = true
            evict(toFit: diskCapacity)
        }

        /// A key whose row was missing, damaged or too large when read: it is gone.
        mutating func forget(_ key: String) {
            guard pending[key] == nil else { return }
            drop(key)
        }

        // MARK: - Writing

        /// The changes to write, leaving them visible here until `written` says they are in the file.
        mutating func takeBatch() -> Batch {
            var touched: [String: Double] = [:]
            for key in touchedKeys {
                guard let index = slots.index(forKey: key), slots.values[index].accessUnwritten else { continue }
                slots.values[index].accessUnwritten = false
                touched[key] = slots.values[index].accessedAt
            }
            touchedKeys = []
            let batch = Batch(changes: pending.map { ($0.key, $0.value.write, $0.value.number) },
                              touched: touched, clearAll: clearAll, clearSince: clearSince)
            clearAll = false
            clearSince = nil
            return batch
        }

        /// `batch` was written (`stored`), or failed for good: its changes are no longer pending (a key
        /// changed again meanwhile stays). After a failure, the keys it would have stored are gone.
        /// Returns the reports to make, outside the lock: the batch's stores, and those replaced or
        /// removed before any batch took them (not written).
        mutating func written(_ batch: Batch, stored: Bool) -> [(WriteReport, Bool)] {
            var made: [(WriteReport, Bool)] = []
            for change in batch.changes {
                if let report = reports.removeValue(forKey: change.number) { made.append((report, stored)) }
                guard pending[change.key]?.number == change.number else { continue }
                pending[change.key] = nil
                if !stored, case .store = change.write { drop(change.key) }
            }
            if !reports.isEmpty {
                let waiting = Set(pending.values.map(\.number))
                for (number, report) in reports where !waiting.contains(number) {
                    reports[number] = nil
                    made.append((report, false))
                }
            }
            return made
        }

        /// `batch` could not be written (another process held the file past the wait): its recency and
        /// clearing are put back for the next write; its changes were never taken out.
        mutating func notWritten(_ batch: Batch) {
            // The slots' times are as recent as the batch's or more: only the marks go back.
            for key in batch.touched.keys {
                guard let index = slots.index(forKey: key), !slots.values[index].accessUnwritten else { continue }
                slots.values[index].accessUnwritten = true
                touchedKeys.append(key)
            }
            clearAll = clearAll || batch.clearAll
            if let since = batch.clearSince { clearSince = min(clearSince ?? since, since) }
        }

        /// Whether anything waits to be written.
        var hasChanges: Bool { !pending.isEmpty || !touchedKeys.isEmpty || clearAll || clearSince != nil }

        /// The uses not yet written, by key (a key dropped since is left out).
        private func unwrittenAccesses() -> [String: Double] {
            var accesses: [String: Double] = [:]
            for key in touchedKeys {
                if let slot = slots[key], slot.accessUnwritten { accesses[key] = slot.accessedAt }
            }
            return accesses
        }

        // MARK: - Bookkeeping

        private mutating func drop(_ key: String) {
            guard let slot = slots.removeValue(forKey: key) else { return }
            diskUsage -= slot.size
            slotOrder.remove(slot.place)
            if let found = slot.kept {
                memoryUsage -= found.entry.memorySize
                keptOrder.remove(found.place)
            }
        }

        /// Keeps `entry` in memory in `key`'s slot (every kept entry has one), if it fits.
        private mutating func keep(_ entry: Entry, for key: String) {
            guard entry.memorySize <= memoryCapacity, let index = slots.index(forKey: key) else { return }
            if let current = slots.values[index].kept {
                memoryUsage -= current.entry.memorySize
                keptOrder.use(current.place)
                slots.values[index].kept = Kept(entry: entry, place: current.place)
            } else {
                slots.values[index].kept = Kept(entry: entry, place: keptOrder.append(key))
            }
            memoryUsage += entry.memorySize
            trimMemory()
        }

        /// Lets go of the least recently used entries in memory beyond `memoryCapacity` (down to nine
        /// tenths of it, so that a full memory makes room for a few stores at once).
        private mutating func trimMemory() {
            guard memoryUsage > memoryCapacity else { return }
            let target = memoryCapacity - memoryCapacity / 10
            while memoryUsage > target, let key = keptOrder.leastRecent, let index = slots.index(forKey: key),
                  let found = slots.values[index].kept {
                slots.values[index].kept = nil
                keptOrder.remove(found.place)
                memoryUsage -= found.entry.memorySize
            }
        }

        /// Removes the least recently used entries when the entries take more than `capacity` bytes, down
        /// to nine tenths of it (so that the file's deletions come in a few batches, not one per store).
        /// Each removal costs the same however many entries there are: nothing is sorted.
        private mutating func evict(toFit capacity: Int) {
            guard diskUsage > capacity else { return }
            let target = capacity - capacity / 10
            while diskUsage > target, let key = slotOrder.leastRecent, slots.index(forKey: key) != nil { remove(key) }
        }
    }
}
