import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Another process holding the cache file's lock for as long as it likes: a cached GET in this process
/// is delayed by at most `SQLiteURLCache.busyTimeoutMilliseconds` (then it goes to the network without
/// the file and succeeds), a batch of writes never waits for the lock while holding the file's own, and
/// lookups are not queued one behind the other's wait (at the same moment, nor after one gave up). The peer is Python's sqlite3 module, which holds
/// its transaction until the test closes its standard input; every GET here completes while it still
/// holds it.
final class CacheBusyPeerTests: CacheDirectoryTestCase {
    private var server: TestServer!
    private var peers: [PeerLock] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try TestServer()
    }

    override func tearDown() {
        peers.forEach { $0.release() }
        server?.shutdown()
        super.tearDown()
    }

    /// Another process holding `databaseFile`'s write lock (`BEGIN EXCLUSIVE`), and with `readsToo` its
    /// readers' as well (`locking_mode = EXCLUSIVE`, as a peer that stopped mid-write would).
    private func lockFile(readsToo: Bool) throws -> PeerLock {
        let peer = try PeerLock(path: databaseFile.path, readsToo: readsToo)
        peers.append(peer)
        let locked = expectation(description: "the peer holds the lock")
        DispatchQueue.global().async {
            if peer.waitLocked() { locked.fulfill() }
        }
        wait(for: [locked], timeout: 10)
        return peer
    }

    /// GETs `path` through `cache`, `count` at once; waits (`timeout` at most) for all of them.
    @discardableResult
    private func get(_ path: String, _ cache: URLCache, count: Int = 1, timeout: TimeInterval = 10) -> [HTTPRequestOperation] {
        let done = expectation(description: "\(count) GETs of \(path)")
        done.expectedFulfillmentCount = count
        let operations = (0..<count).map { _ -> HTTPRequestOperation in
            let operation = HTTPRequestOperation(request: URLRequest(url: server.url(path)))
            operation.urlCache = cache
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, _ in done.fulfill() })
            return operation
        }
        // Started on a queue: the lookup runs in `start()`, and the wait must measure it too.
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        queue.addOperations(operations, waitUntilFinished: false)
        wait(for: [done], timeout: timeout)
        return operations
    }

    private func gets(_ name: String) -> Int {
        server.requests.filter { $0.path == "/cache/\(name)" && $0.method == "GET" }.count
    }

    func testAPeerHoldingTheWholeFileDelaysALookupOnceThenTheNetworkAnswers() throws {
        let path = "/cache/held?cc=max-age%3D600"
        do {
            // Stored, and the cache let go of (its connection closed): the peer can then take the file.
            let first = openSQLiteCache()
            get(path, first)
            first.flush()
        }
        XCTAssertEqual(gets("held"), 1)
        let peer = try lockFile(readsToo: true)
        // A cache opened now, as a new process would: nothing in memory.
        let cache = openSQLiteCache()
        let operations = get(path, cache)
        XCTAssertNil(operations[0].error)
        XCTAssertEqual(operations[0].responseString, "held v1 #2", "the network answered, the file unread")
        XCTAssertEqual(cache.readsFoundBusy, 1, "one read waited for the file")
        // Eight other URLs at once: the file is left alone, so none of them waits for it.
        var others: [HTTPRequestOperation] = []
        for index in 0..<8 { others += get("/cache/other\(index)?cc=max-age%3D600", cache) }
        XCTAssertEqual(others.filter { $0.error == nil }.count, 8)
        XCTAssertEqual((0..<8).map { gets("other\($0)") }, Array(repeating: 1, count: 8), "each went to the network")
        XCTAssertLessThanOrEqual(cache.readsFoundBusy, 2, "none of them waited for the file (one may, a second later)")
        // The response stored meanwhile waits in memory for the file: it answers.
        let again = get(path, cache)
        XCTAssertEqual(again[0].metrics?.cacheStatus, .hit)
        XCTAssertEqual(again[0].responseString, "held v1 #2")
        XCTAssertFalse(peer.hasExited, "all of it while the peer held the file")
    }

    func testLookupsMeetingTheLockAtOnceWaitSideBySideNotOneBehindAnother() throws {
        do {
            // A file with the cache's table, and the cache let go of: the peer can take it.
            let first = openSQLiteCache()
            get("/cache/side?cc=max-age%3D600", first)
            first.flush()
        }
        let peer = try lockFile(readsToo: true)
        // A cache opened now, as a new process would: every lookup needs the file, and meets the lock.
        let cache = openSQLiteCache()
        let count = 20
        let ready = DispatchGroup(), finished = DispatchGroup()
        let gate = DispatchSemaphore(value: 0)
        let hits = Protected(0)
        for index in 0..<count {
            let request = URLRequest(url: server.url("/cache/side\(index)?cc=max-age%3D600"))
            ready.enter()
            finished.enter()
            Thread {
                ready.leave()
                gate.wait()
                if cache.cachedResponse(for: request) != nil { hits.withLock { $0 += 1 } }
                finished.leave()
            }.start()
        }
        XCTAssertEqual(ready.wait(timeout: .now() + 10), .success, "the lookups' threads started")
        let start = Date()
        for _ in 0..<count { gate.signal() }
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "every lookup returned")
        let elapsed = Date().timeIntervalSince(start)
        let wait = Double(SQLiteURLCache.busyTimeoutMilliseconds) / 1000
        // One behind the other (each waiting inside SQLite's busy handler, holding the cache's lock
        // for the file), they would take `count` waits: 2 s. Side by side, about one.
        XCTAssertLessThan(elapsed, Double(count) * wait / 4,
                          "\(count) lookups took \(elapsed) s, one wait is \(wait) s")
        XCTAssertEqual(hits.value, 0, "every lookup missed")
        XCTAssertGreaterThanOrEqual(cache.readsFoundBusy, 1, "the lookups met the peer's lock")
        XCTAssertFalse(peer.hasExited, "all of it while the peer held the file")
    }

    func testAPeerHoldingTheWriteLockNeitherDelaysLookupsNorLosesTheWrite() throws {
        let kept = "/cache/kept?cc=max-age%3D600"
        let cache = openSQLiteCache()
        get(kept, cache)
        cache.flush()
        let peer = try lockFile(readsToo: false)
        // Its store goes into a batch that meets the lock: tried again every 0.2 s until the peer lets go.
        let new = get("/cache/new?cc=max-age%3D600", cache)
        XCTAssertNil(new[0].error)
        XCTAssertEqual(gets("new"), 1)
        for round in 1...3 {
            // Right after a try of the batch began, a lookup that reads the file does not wait behind it
            // (a batch that waited for the lock, as one did for 5 s, would hold it up past 2.5 s, 25 times
            // the bound).
            let tried = cache.batchesTried
            XCTAssertTrue(eventually(timeout: 10) { cache.batchesTried > tried }, "round \(round)")
            let hit = get(kept, cache, timeout: 2.5)
            XCTAssertEqual(hit[0].metrics?.cacheStatus, .hit, "round \(round): read from the file")
            XCTAssertEqual(hit[0].responseString, "kept v1 #1")
        }
        XCTAssertEqual(gets("kept"), 1)
        XCTAssertEqual(cache.readsFoundBusy, 0, "a write lock never keeps readers out of the file")
        XCTAssertFalse(peer.hasExited, "all of it while the peer held the lock")
        peer.release()
        cache.flush()
        let reopened = openSQLiteCache()
        XCTAssertEqual(get("/cache/new?cc=max-age%3D600", reopened)[0].metrics?.cacheStatus, .hit,
                       "the batch was written once the peer let go")
    }
}

/// A Python process holding an SQLite file's lock until its standard input closes.
final class PeerLock: @unchecked Sendable {   // `process` and the pipes are only used from the test's thread
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()

    private static let script = """
        import sqlite3, sys
        connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
        if sys.argv[2] == "all":
            connection.execute("PRAGMA locking_mode = EXCLUSIVE")
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("UPDATE entries SET accessed_at = accessed_at")
        print("locked", flush=True)
        sys.stdin.read()
        connection.execute("COMMIT")
        """

    init(path: String, readsToo: Bool) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", PeerLock.script, path, readsToo ? "all" : "writes"]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// Reads the peer's output until it says it holds the lock; false if it ended first.
    func waitLocked() -> Bool {
        var text = ""
        while !text.contains("locked\n") {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { return false }
            text += String(decoding: data, as: UTF8.self)
        }
        return true
    }

    var hasExited: Bool { !process.isRunning }

    /// Lets the peer commit and end; waits for it.
    func release() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
