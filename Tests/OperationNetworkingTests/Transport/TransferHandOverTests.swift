import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The hand-over that licenses `Transfer: @unchecked Sendable` is checked, not trusted: once a network
/// thread took a transfer in, a debug build stops the process when one of its network-thread methods
/// runs on any other thread. Each wrong call runs in a child process of its own, which must die of
/// the assertion (a clean exit would mean the check is gone).
final class TransferHandOverTests: ServerTestCase {
    private static let childVariable = "ONET_HAND_OVER_CHILD"

    func testTakingInATransferOffItsNetworkThreadTraps() throws {
        try expectTrap(in: "testChildHalfTakesInOffTheThread")
    }

    func testDelayingATransferFromAnotherThreadTraps() throws {
        try expectTrap(in: "testChildHalfDelaysFromTheTestThread")
    }

    func testNextAttemptFromAnotherThreadTraps() throws {
        try expectTrap(in: "testChildHalfBeginsTheNextAttemptFromTheTestThread")
    }

    /// A transfer the network thread never took in is its submitter's: ending it there is allowed
    /// (the path taken when no network thread could start), and leaves it finished.
    func testATransferNotYetTakenInEndsOnItsSubmittersThread() {
        let transfer = Transfer(request: request("/echo"), outputStream: nil, resumeFrom: nil, initialBody: Data(),
                                delegate: TransferOutcomeRecorder(XCTestExpectation(description: "never told")))
        XCTAssertNotNil(transfer.finish())
        XCTAssertNil(transfer.finish(), "a transfer ends once")
    }

    // MARK: Child halves, each skipped in any run but its parent's

    func testChildHalfTakesInOffTheThread() throws {
        try requireChild()
        let thread = NetworkThread()
        let transfer = makeTransfer()
        _ = transfer.takeIn(by: thread, at: monotonicNow())
    }

    func testChildHalfDelaysFromTheTestThread() throws {
        try requireChild()
        let transfer = try transferOnItsThread()
        _ = transfer.delay(for: 1, now: monotonicNow())
    }

    func testChildHalfBeginsTheNextAttemptFromTheTestThread() throws {
        try requireChild()
        let transfer = try transferOnItsThread()
        _ = transfer.beginNextAttempt(now: monotonicNow())
    }

    // MARK: Helpers

    private func requireChild() throws {
        guard ProcessInfo.processInfo.environment[Self.childVariable] != nil else {
            throw XCTSkip("a child half of TransferHandOverTests")
        }
    }

    private func makeTransfer() -> Transfer {
        Transfer(request: request("/stall-headers"), outputStream: nil, resumeFrom: nil, initialBody: Data(),
                 delegate: TransferOutcomeRecorder(XCTestExpectation(description: "never ends")))
    }

    /// A transfer a network thread took in and put on curl: the server has its request.
    private func transferOnItsThread() throws -> Transfer {
        let thread = NetworkThread()
        let transfer = makeTransfer()
        thread.submit(.add(transfer))
        let arrived = expectation(description: "the request reached the server")
        let server: TestServer = self.server
        DispatchQueue.global().async {
            while server.requests(path: "/stall-headers").isEmpty { usleep(1_000) }
            arrived.fulfill()
        }
        wait(for: [arrived], timeout: 10)
        return transfer
    }

    private func expectTrap(in childTest: String) throws {
        #if DEBUG
        let (child, text) = try runChild("TransferHandOverTests/\(childTest)", environment: [Self.childVariable: "1"])
        // A trap ends the child by its signal. (A sanitizer's crash handler may end it with an exit
        // status instead, or hang: scripts/test runs this class only in the plain debug pass.)
        XCTAssertFalse(child.terminationReason == .exit && child.terminationStatus == 0, "the child did not trap: \(text)")
        XCTAssertTrue(text.contains("Assertion failed") && text.contains("network thread"),
                      "the child stopped for another reason: \(text)")
        XCTAssertFalse(text.contains("\(childTest)' passed"), text)
        #else
        throw XCTSkip("assertions are compiled out of this build")
        #endif
    }
}
