import Foundation
@testable import OperationNetworking
import XCTest

/// `Protected`, the lock that owns each piece of the library's mutable state.
final class ProtectedTests: LibraryTestCase {
    /// A measured choice (bench/runs/cache-2026-12-08-round10.md): the value and its mutex live in one
    /// `ManagedBuffer`, not in a stored `var` beside an `NSLock`. The `var` cost a run-time exclusivity
    /// check on every acquisition, and the `NSLock` an object, three allocations and a dynamic call.
    func testTheValueAndItsMutexAreOneBufferWithNoLockObject() {
        let protected = Protected(0)
        let parts = Mirror(reflecting: protected).children.map(\.value)
        XCTAssertEqual(parts.count, 1, "Protected holds more than its buffer")
        XCTAssertTrue(parts.allSatisfy { $0 is ManagedBuffer<Int, pthread_mutex_t> }, "the value left the buffer")
        XCTAssertFalse(parts.contains { $0 is NSLocking }, "an NSLock is back")
    }

    /// One thread at a time: many threads adding to one value lose nothing.
    func testConcurrentUpdatesLoseNothing() {
        let counter = Protected(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
        }
        XCTAssertEqual(counter.value, 80_000)
    }

    /// The value is destroyed with its owner (and the mutex with it): nothing it holds outlives it.
    func testTheValueGoesWithItsOwner() {
        final class Token {}
        weak var weakToken: Token?
        do {
            let token = Token()
            weakToken = token
            let protected = Protected([token])
            XCTAssertEqual(protected.value.count, 1)
        }
        XCTAssertNil(weakToken)
    }
}
