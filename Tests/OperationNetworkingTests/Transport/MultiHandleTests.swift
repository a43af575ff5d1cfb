import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `MultiHandleState`, every phase and event, without curl: only the live handle is ever handed out,
/// and every handle that stops being live is cleaned up exactly once.
final class MultiHandleStateTests: LibraryTestCase {
    private let first = UnsafeMutableRawPointer(bitPattern: 0x1000)!
    private let second = UnsafeMutableRawPointer(bitPattern: 0x2000)!
    private let third = UnsafeMutableRawPointer(bitPattern: 0x3000)!

    func testAMadeHandleIsLiveAndNoHandleIsShutDown() {
        XCTAssertEqual(MultiHandleState(made: first).phase, .live(first))
        XCTAssertEqual(MultiHandleState(made: first).live, first)
        XCTAssertEqual(MultiHandleState(made: nil).phase, .shutDown)
        XCTAssertNil(MultiHandleState(made: nil).live)
    }

    func testReplacingMakesTheFreshHandleLiveAndCleansUpTheOld() {
        var state = MultiHandleState(made: first)
        XCTAssertEqual(state.replaced(by: second), .cleanUp(first))
        XCTAssertEqual(state.live, second)
        XCTAssertEqual(state.replaced(by: third), .cleanUp(second))
        XCTAssertEqual(state.phase, .live(third))
    }

    func testShuttingDownCleansUpTheLiveHandleOnce() {
        var state = MultiHandleState(made: first)
        XCTAssertEqual(state.shutDown(), .cleanUp(first))
        XCTAssertEqual(state.phase, .shutDown)
        XCTAssertNil(state.live)
        XCTAssertNil(state.shutDown(), "a second shut-down cleaned a handle up again")
    }

    func testAHandleMadeAfterShutDownIsCleanedUpAndNeverLive() {
        var state = MultiHandleState(made: first)
        _ = state.shutDown()
        XCTAssertEqual(state.replaced(by: second), .cleanUp(second))
        XCTAssertEqual(state.phase, .shutDown)
        var never = MultiHandleState(made: nil)
        XCTAssertEqual(never.replaced(by: second), .cleanUp(second))
        XCTAssertNil(never.shutDown())
    }
}

/// A network thread makes its multi handle again to close idle connections while its loop runs
/// (the path `ConnectionCacheTests` walks); no call of that turn or a later one reaches the replaced
/// handle, which libcurl would answer with `CURLM_BAD_HANDLE`.
final class MultiHandleReplacementTests: ServerTestCase {
    func testNoCallReachesAReplacedHandle() {
        let thread = NetworkThread(idleConnectionLifetime: 1)
        for round in 0..<2 {
            let done = expectation(description: "transfer \(round) ended")
            let recorder = submit("/echo", to: thread, done: done)
            wait(for: [done], timeout: 5)
            XCTAssertEqual(recorder.completed, true)
            // The connection sits idle past its 1 s lifetime: the loop makes its handle again.
            XCTAssertTrue(eventually(timeout: 5) { thread.statistics.multiHandleReplacements > round },
                          "the multi handle was not made again")
        }
        thread.shutDown()
        XCTAssertEqual(thread.statistics.badMultiHandleAnswers, 0, "a call reached a multi handle that was not the live one")
        XCTAssertEqual(server.acceptedConnections, 2, "the second request reused a connection of the replaced handle")
    }
}
