import Foundation
@testable import OperationNetworking
import XCTest

/// The host process is the caller's: a network thread leaves glibc's allocator alone unless the
/// process opts in with `OPERATIONNETWORKING_MALLOC_TUNING=1`, and libcurl's global set-up runs once
/// per process however many threads are made.
final class HostProcessTests: LibraryTestCase {
    /// Ends `count` transfers and lets `connections` sit idle a second after a busy stretch: the
    /// moment an opted-in thread trims.
    private func trimsAfterABusyStretch(_ connections: IdleConnections) -> Int {
        for _ in 0..<IdleConnections.trimAfterTransfers { connections.transferEnded() }
        _ = connections.idle(now: 1_000_000_000, lifetime: 30)
        _ = connections.idle(now: 2_500_000_000, lifetime: 30)
        return connections.trims
    }

    func testADefaultThreadLeavesTheAllocatorAlone() {
        XCTAssertNil(ProcessInfo.processInfo.environment[MallocThresholds.environmentVariable],
                     "the test process must not opt in")
        XCTAssertFalse(MallocThresholds.optedIn)
        let thread = NetworkThread()
        defer { thread.shutDown() }
        XCTAssertFalse(thread.tunesAllocator)
        XCTAssertFalse(thread.idleConnections.trimsMemory)
        XCTAssertEqual(trimsAfterABusyStretch(IdleConnections(trimsMemory: false)), 0, "an idle thread trimmed memory")
    }

    func testTheOptInTunesAndTrims() {
        XCTAssertTrue(MallocThresholds.isOptIn("1"))
        for value in [nil, "", "0", "true", "yes", " 1"] {
            XCTAssertFalse(MallocThresholds.isOptIn(value), "\(String(describing: value)) opted in")
        }
        let thread = NetworkThread(tunesAllocator: true)
        defer { thread.shutDown() }
        XCTAssertTrue(thread.tunesAllocator)
        XCTAssertTrue(thread.idleConnections.trimsMemory)
        XCTAssertEqual(trimsAfterABusyStretch(IdleConnections(trimsMemory: true)), 1)
    }

    func testCurlGlobalInitRunsOncePerProcess() {
        let threads = (0..<3).map { _ in NetworkThread() }
        for thread in threads { thread.shutDown() }
        _ = NetworkThread.shared
        XCTAssertEqual(CurlGlobal.calls.value, 1)
    }
}
