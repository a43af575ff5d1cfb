import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Once `cancel()` returned, its operation opens no connection: neither one it had not started yet
/// nor one curl was about to make for it before the network thread read the cancel.
final class CancelOpensNoConnectionTests: ServerTestCase {
    /// Connects to the test server on a socket of the test's own and sends a request tagged `tag`;
    /// returns the connection's number in the server's accept order once the request arrived. The
    /// server accepts connections in the order their handshakes completed, so every connection made
    /// before this one has a lower number.
    private func markerConnection(_ tag: String) throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(descriptor, 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(server.port).bigEndian
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        XCTAssertTrue(connected)
        let request = Array("GET /echo?marker=\(tag) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        XCTAssertEqual(write(descriptor, request, request.count), request.count)
        XCTAssertTrue(eventually(timeout: 10) { [server = server!] in
            server.requests(path: "/echo").contains { $0.query["marker"] == tag }
        }, "the marker request \(tag) never arrived")
        return try XCTUnwrap(server.requests(path: "/echo").first { $0.query["marker"] == tag }?.connectionID)
    }

    func testNoConnectionIsOpenedOnceCancelAllOperationsReturned() throws {
        let count = 1000
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        let ended = expectation(description: "\(count) operations ended")
        ended.expectedFulfillmentCount = count
        for _ in 0..<count {
            let operation = HTTPRequestOperation(request: request("/delay/300"))
            operation.setCompletionBlockWithSuccess({ _, _ in ended.fulfill() }, failure: { _, _ in ended.fulfill() })
            queue.addOperation(operation)
        }
        // Cancel while curl is busy connecting for the burst.
        XCTAssertTrue(eventually { [server = server!] in server.acceptedConnections >= 20 })
        queue.cancelAllOperations()
        let atCancel = try markerConnection("cancel-returned")
        wait(for: [ended], timeout: 60)
        XCTAssertTrue(eventually(timeout: 10) { NetworkThread.shared.statistics.active == 0 },
                      "transfers still on curl after every operation ended")
        let afterDrain = try markerConnection("drained")
        // The network thread may have been inside one connect, its cancel check passed before the last
        // cancel() returned, as the marker connected; it is one thread, so at most one such connect
        // can come after the marker. Any other connection between the markers came after a cancel.
        XCTAssertLessThanOrEqual(afterDrain - atCancel - 1, 1,
                                 "\(afterDrain - atCancel - 1) connections were opened after cancelAllOperations() returned")
    }
}
