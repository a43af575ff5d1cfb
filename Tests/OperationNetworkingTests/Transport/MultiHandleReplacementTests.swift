import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

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
