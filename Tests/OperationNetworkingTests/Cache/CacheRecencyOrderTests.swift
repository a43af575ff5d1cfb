import Foundation
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// The cache evicts the least recently used entries, on disk and in memory, from an order kept as
/// entries are used (`RecencyOrder`), not from a sort of every key when it is full: the order must
/// be the order of use, through stores, lookups, repeats, removals and a reload of the keys from the file.
final class CacheRecencyOrderTests: LibraryTestCase {
    func testTheOrderFollowsUseAndReusesFreedPlaces() {
        var order = RecencyOrder<String>()
        XCTAssertNil(order.leastRecent)
        let a = order.append("a"), b = order.append("b"), c = order.append("c")
        XCTAssertEqual(order.leastRecent, "a")
        order.use(a)
        XCTAssertEqual(order.leastRecent, "b")
        order.use(a)   // the newest used again changes nothing
        order.remove(b)
        XCTAssertEqual(order.leastRecent, "c")
        XCTAssertEqual(order.count, 2)
        let d = order.append("d")
        XCTAssertEqual(d, b, "a freed place is reused")
        order.remove(c)
        XCTAssertEqual(order.leastRecent, "a")
        order.remove(a)
        XCTAssertEqual(order.leastRecent, "d")
        order.remove(d)
        XCTAssertNil(order.leastRecent)
        XCTAssertEqual(order.count, 0)
    }

    /// 400 entries in a cache that holds 100: the ones looked up along the way stay, and the rest that
    /// stay are the newest, exactly what an order of use keeps.
    func testEvictionOnDiskTakesTheLeastRecentlyUsedThroughStoresAndLookups() {
        var entries = SQLiteURLCache.Entries(memoryCapacity: 0, diskCapacity: 100 * 1_000)
        entries.load([])
        var model: [String] = []   // least recently used first
        func used(_ key: String) {
            model.removeAll { $0 == key }
            model.append(key)
        }
        for index in 0..<400 {
            let key = "k\(index)"
            entries.store(entry(key), for: key, now: Double(index))
            used(key)
            if model.count > 100 { model.removeFirst(model.count - 90) }   // down to nine tenths, as the cache
            if index % 7 == 0, let old = model.dropLast().first(where: { (Int($0.dropFirst()) ?? 1) % 3 == 0 }) {
                if case .absent = entries.lookUp(old, now: Double(index)) { return XCTFail("\(old) after \(index)") }
                used(old)
            }
        }
        XCTAssertEqual(Set(entries.slots.keys), Set(model))
        XCTAssertLessThanOrEqual(entries.diskUsage, 100 * 1_000)
    }

    /// Reading the keys back from the file orders them by the recency it kept; memory's own order keeps
    /// the entries used last.
    func testAReloadOrdersByTheFilesRecencyAndMemoryKeepsTheLastUsed() {
        var entries = SQLiteURLCache.Entries(memoryCapacity: 10 * 1_000, diskCapacity: 5 * 1_000)
        let rows = (0..<5).map { (key: "r\($0)", slot: SQLiteURLCache.Entries.Slot(size: 1_000, accessedAt: Double(10 - $0), storedAt: 0)) }
        entries.load(rows)   // accessed last: r0, then r1, …; the least recent is r4
        entries.store(entry("new"), for: "new", now: 20)
        XCTAssertNil(entries.slots["r4"], "the least recently accessed row goes first")
        XCTAssertNotNil(entries.slots["r0"])
        XCTAssertNotNil(entries.slots["new"])
        // Memory: 12 entries stored into room for 10, the first looked up along the way.
        var memory = SQLiteURLCache.Entries(memoryCapacity: 10 * 1_000, diskCapacity: 1_000_000)
        memory.load([])
        for index in 0..<12 {
            memory.store(entry("m\(index)"), for: "m\(index)", now: Double(index))
            _ = memory.lookUp("m0", now: Double(index))
        }
        XCTAssertNotNil(memory.keptEntry(for: "m0"))
        XCTAssertNil(memory.keptEntry(for: "m1"))
        XCTAssertNotNil(memory.keptEntry(for: "m11"))
    }

    /// A key's uses reach the file once a batch, with the latest time, however often it was used (the
    /// use is marked on its slot, not hashed into a map of its own each time); a batch that could not be
    /// written puts them back; a reload of the keys keeps uses not yet written; a dropped key's are not written.
    func testUsesAreWrittenOnceABatchPutBackAndKeptThroughAReload() {
        var entries = SQLiteURLCache.Entries(memoryCapacity: 10_000, diskCapacity: 100_000)
        entries.load([(key: "a", slot: SQLiteURLCache.Entries.Slot(size: 10, accessedAt: 1, storedAt: 0)),
                      (key: "b", slot: SQLiteURLCache.Entries.Slot(size: 10, accessedAt: 2, storedAt: 0))])
        XCTAssertFalse(entries.hasChanges)
        _ = entries.lookUp("a", now: 5)
        _ = entries.lookUp("a", now: 7)
        XCTAssertTrue(entries.hasChanges)
        XCTAssertEqual(entries.takeBatch().touched, ["a": 7])
        XCTAssertEqual(entries.takeBatch().touched, [:], "taken once")
        _ = entries.lookUp("b", now: 9)
        entries.notWritten(entries.takeBatch())
        XCTAssertEqual(entries.takeBatch().touched, ["b": 9], "put back after a batch that was not written")
        _ = entries.lookUp("b", now: 20)
        entries.load([(key: "b", slot: SQLiteURLCache.Entries.Slot(size: 10, accessedAt: 3, storedAt: 0))])
        XCTAssertEqual(entries.takeBatch().touched, ["b": 20], "a reload keeps the use not yet written")
        _ = entries.lookUp("b", now: 30)
        entries.remove("b")
        XCTAssertNil(entries.takeBatch().touched["b"], "a dropped key's use is not written")
    }

    /// Memory counts what it holds: an entry a fresh hit may answer keeps its answering head, and
    /// counts its bytes beside the row's (the disk counts the row alone).
    func testMemoryCountsTheAnsweringHeadAnEntryKeeps() throws {
        var entries = SQLiteURLCache.Entries(memoryCapacity: 1_000_000, diskCapacity: 1_000_000)
        entries.load([])
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/fresh"))
        let fields = ["cache-control": "max-age=60", "content-type": "text/plain"]
        let fresh = SQLiteURLCache.Entry(url: url, statusCode: 200, headers: fields, fields: fields,
                                         facts: FreshnessFacts(fields, now: Date()), body: Data(), metadata: .absent,
                                         size: 1_000, storedAt: 0)
        let head = try XCTUnwrap(fresh.answeringHead).fieldStorageSize
        XCTAssertGreaterThan(head, 0)
        entries.store(fresh, for: "fresh", now: 1)
        entries.store(entry("plain"), for: "plain", now: 2)
        XCTAssertEqual(entries.memoryUsage, 2_000 + head)
        XCTAssertEqual(entries.diskUsage, 2_000)
        entries.remove("fresh")
        XCTAssertEqual(entries.memoryUsage, 1_000)
    }

    private func entry(_ key: String) -> SQLiteURLCache.Entry {
        let url = URL(string: "http://127.0.0.1:9/\(key)") ?? URL(fileURLWithPath: "/")
        return SQLiteURLCache.Entry(url: url, statusCode: 200, headers: [:], fields: [:], facts: FreshnessFacts([:], now: Date()),
                                    body: Data(), metadata: .absent, size: 1_000, storedAt: 0)
    }
}
