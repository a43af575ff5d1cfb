import CTestEnvironment
import Foundation
@testable import OperationNetworking
import XCTest

/// What an operation costs while it waits in a queue (issue 57): apps queue a backlog of thousands at
/// once, so a queued operation carries only what a queued operation needs — the run's state is made
/// when it starts, the manager's settings are shared, not copied, and the operation has one lock.
/// Measured in allocated bytes (mallinfo2, through CTestEnvironment), which count what the queued
/// operations hold whatever the allocator keeps cached: the same figure on every run, unlike RSS.
final class QueuedOperationMemoryTests: LibraryTestCase {
    private static let count = 10_000
    private static let warmUp = 100
    /// 2 KB, as issue 57 asks again: b5b6090's queued GET took under 2 KB (1,909 bytes of RSS at 100,000
    /// by `onet bench --enqueue-all`, the same shape as the first test), the code before this guard
    /// over 3 KB (3,030 bytes; 3,024 here).
    private static let limit = 2_048

    private let url = "http://127.0.0.1:9/queued"

    /// Bytes the allocator handed out and has not taken back.
    private func allocatedBytes() -> Int {
        Int(ctest_allocated_bytes())
    }

    /// Adds `count` operations made by `enqueue` to `queue`, suspended, and returns the growth of the
    /// allocated bytes divided by `count`; then cancels them and lets them finish (no request is sent).
    private func bytesPerQueuedOperation(on queue: OperationQueue, _ enqueue: () -> Void) -> Int {
        queue.isSuspended = true
        // Warm-up: whatever is made once (shared defaults, the queue's own structures) is not measured.
        for _ in 0..<Self.warmUp { enqueue() }
        let before = allocatedBytes()
        for _ in 0..<Self.count { enqueue() }
        let growth = allocatedBytes() - before
        queue.cancelAllOperations()
        queue.isSuspended = false
        queue.waitUntilAllOperationsAreFinished()
        return growth / Self.count
    }

    /// A default manager's `GET` of a plain URL onto its suspended queue, with success and failure
    /// blocks that count the ends as an app's would (`onet bench --enqueue-all`'s shape): at most 2 KB
    /// each (1,968 here). With the operation's whole state inline, its configuration copied from the
    /// manager and a second lock for the response handling, one took 3,024 bytes and this failed.
    func testADefaultManagersQueuedGETTakesAtMostTwoKilobytes() throws {
        let manager = HTTPRequestOperationManager(baseURL: nil)
        let ended = Counter(), total = Self.warmUp + Self.count, done = DispatchSemaphore(value: 0)
        let perOperation = bytesPerQueuedOperation(on: manager.operationQueue) {
            manager.GET(url, parameters: nil, success: { _, _ in
                if ended.add() == total { done.signal() }
            }, failure: { _, _ in
                if ended.add() == total { done.signal() }
            })
        }
        XCTAssertLessThanOrEqual(perOperation, Self.limit, "a queued GET of a default manager took \(perOperation) bytes")
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "every operation ended (cancelled, none of them sent)")
    }

    /// An operation made alone, with the default configuration, in a suspended queue of its own (1,311
    /// bytes here; 2,367 before, and this failed).
    func testADefaultQueuedOperationTakesAtMostTwoKilobytes() throws {
        let queue = OperationQueue()
        let target = try XCTUnwrap(URL(string: url))
        let perOperation = bytesPerQueuedOperation(on: queue) {
            queue.addOperation(HTTPRequestOperation(request: URLRequest(url: target)))
        }
        XCTAssertLessThanOrEqual(perOperation, Self.limit, "a default queued operation took \(perOperation) bytes")
    }
}

/// A count the operations' blocks add to, from the callback queue.
private final class Counter: Sendable {
    private let count = Protected(0)
    /// Adds one; returns the count.
    func add() -> Int { count.withLock { $0 += 1; return $0 } }
}
