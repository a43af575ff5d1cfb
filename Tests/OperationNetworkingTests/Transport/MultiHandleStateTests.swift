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
