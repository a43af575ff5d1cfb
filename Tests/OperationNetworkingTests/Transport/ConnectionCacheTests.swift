import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Idle keep-alive connections are kept for a bounded time and in a cache sized from the descriptor
/// limit, so connections the server closed long ago do not pile up in CLOSE-WAIT.
final class ConnectionCacheTests: ServerTestCase {
    func testTheCacheIsAQuarterOfTheDescriptorLimitWithinBounds() {
        XCTAssertEqual(NetworkThread.connectionCacheSize(forDescriptorLimit: 64), 16)
        XCTAssertEqual(NetworkThread.connectionCacheSize(forDescriptorLimit: 8), 4)
        XCTAssertEqual(NetworkThread.connectionCacheSize(forDescriptorLimit: 1 << 40), NetworkThread.maxActiveTransfers)
        XCTAssertEqual(NetworkThread.shared.idleConnectionLifetime, 30)
    }

    private func fetch(on thread: NetworkThread) {
        let done = expectation(description: "transfer ended")
        let recorder = submit("/echo", to: thread, done: done)
        wait(for: [done], timeout: 5)
        XCTAssertEqual(recorder.completed, true)
    }

    func testAConnectionIdleLongerThanTheLifetimeIsNotReused() {
        let shortLived = NetworkThread(idleConnectionLifetime: 1)
        defer { shortLived.shutDown() }
        fetch(on: shortLived)
        fetch(on: shortLived)
        XCTAssertEqual(server.acceptedConnections, 1, "reused while fresh")
        // Letting the connection sit idle past its lifetime is the behaviour under test, not a wait
        // for something to happen.
        Thread.sleep(forTimeInterval: 2.2)
        fetch(on: shortLived)
        XCTAssertEqual(server.acceptedConnections, 2, "a connection idle for 2 s was reused under a 1 s lifetime")
    }
}
