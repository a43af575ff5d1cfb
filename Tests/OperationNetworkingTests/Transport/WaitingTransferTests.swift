import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Transfers past the active limit wait without a curl handle; the slots that ending transfers free
/// are filled in the same loop turn, not after the network thread's idle poll.
final class WaitingTransferTests: ServerTestCase {
    func testWaitingTransfersStartAsSoonAsEarlierOnesEnd() {
        // One slot: each transfer waits for the previous one, and each end leaves nothing on curl.
        let thread = NetworkThread(activeLimit: 1)
        defer { thread.shutDown() }
        let ends = (0..<3).map { expectation(description: "transfer \($0) ended") }
        let recorders = ends.map { submit("/echo", to: thread, done: $0) }
        // Under the 1 s a parked loop sleeps: one such sleep per waiting transfer would take 2 s.
        wait(for: ends, timeout: 0.9)
        XCTAssertEqual(recorders.map(\.completed), [true, true, true])
        XCTAssertEqual(server.requests(path: "/echo").count, 3)
    }
}
