import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A thread that tests make ends when told to, without first sleeping out its idle poll.
final class NetworkThreadShutDownTests: ServerTestCase {
    func testShutDownDoesNotWaitOutTheIdlePoll() {
        let thread = NetworkThread()
        let ended = expectation(description: "transfer ended")
        _ = submit("/echo", to: thread, done: ended)
        wait(for: [ended], timeout: 5)
        XCTAssertTrue(eventually { thread.isParked })   // asleep in the 1 s poll of an idle loop
        let stopped = expectation(description: "thread shut down")
        DispatchQueue.global().async {
            thread.shutDown()
            stopped.fulfill()
        }
        wait(for: [stopped], timeout: 0.5)
    }

    /// A test-made thread that shuts down frees its multi handle (closing the connection it kept
    /// alive and libcurl's wake-up socket pair), its share handle and its pooled easy handles.
    func testShutDownFreesTheThreadsHandlesAndTheirDescriptors() {
        let descriptorsBefore = openDescriptors()
        let handlesBefore = CurlEasyHandle.liveCount
        var thread: NetworkThread? = NetworkThread()
        let ended = expectation(description: "transfer ended")
        if let thread { _ = submit("/echo", to: thread, done: ended) }
        wait(for: [ended], timeout: 5)
        XCTAssertEqual(server.openConnections, 1, "the connection is kept for reuse")
        XCTAssertEqual(CurlEasyHandle.liveCount, handlesBefore + 1, "the handle is pooled")
        thread?.shutDown()
        XCTAssertEqual(CurlEasyHandle.liveCount, handlesBefore)
        let server = self.server!
        XCTAssertTrue(eventually { server.openConnections == 0 }, "the kept connection is still open")
        thread = nil   // its eventfd goes with the object
        XCTAssertTrue(eventually { openDescriptors().subtracting(descriptorsBefore).isEmpty },
                      "still open: \(openDescriptors().subtracting(descriptorsBefore).sorted())")
    }
}
