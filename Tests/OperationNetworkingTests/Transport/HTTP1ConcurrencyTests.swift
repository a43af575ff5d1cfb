import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The per-host cap that keeps HTTP/2 bursts on few connections never caps an HTTP/1.x host: a
/// queue's concurrency there is one connection per request.
final class HTTP1ConcurrencyTests: LibraryTestCase {
    /// `count` requests of 300 ms at once; returns how many went over a reused connection.
    @discardableResult
    private func concurrentSlowRequests(_ count: Int, to server: TestServer, policy: SecurityPolicy? = nil) -> Int {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        let done = expectation(description: "responses")
        done.expectedFulfillmentCount = count
        let failures = Recorder<String>()
        let reused = Recorder<Bool>()
        for _ in 0..<count {
            let operation = HTTPRequestOperation(request: URLRequest(url: server.url("/delay/300")))
            if let policy { operation.securityPolicy = policy }
            operation.setCompletionBlockWithSuccess({ operation, _ in
                reused.append(operation.metrics?.connectionReused ?? false)
                done.fulfill()
            }, failure: { _, error in
                failures.append("\(error)")
                done.fulfill()
            })
            queue.addOperation(operation)
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(failures.all, [])
        // Told when a count falls short: how many requests found a connection free.
        return reused.all.filter { $0 }.count
    }

    func testPlainHTTPConcurrencyIsNotCapped() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        concurrentSlowRequests(12, to: server)
        XCTAssertGreaterThanOrEqual(server.acceptedConnections, 12)
    }

    func testAFirstBurstToAnHTTPSOriginThatSpeaksOnlyHTTP1IsNotCapped() throws {
        // Cold: nothing is known of the origin when the burst starts, so it must not be taken for an
        // HTTP/2 one (capped) until a connection says otherwise.
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking cold HTTP/1 Test Root")
        let server = try TestServer(tls: try authority.issue(), applicationProtocols: ["http/1.1"])
        defer { server.shutdown() }
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        let reused = concurrentSlowRequests(16, to: server, policy: policy)
        XCTAssertEqual(server.acceptedConnections, 16, "one connection per concurrent request (\(reused) of 16 reused one)")
        XCTAssertEqual(server.requests(path: "/delay/300").count, 16)
    }

    func testAnHTTPSOriginThatSpeaksHTTP1IsNotCappedOnceKnown() throws {
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking HTTP/1 Test Root")
        let server = try TestServer(tls: try authority.issue())
        defer { server.shutdown() }
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        concurrentSlowRequests(1, to: server, policy: policy)   // learns that the origin is HTTP/1.1
        let before = server.acceptedConnections
        let reused = concurrentSlowRequests(12, to: server, policy: policy)
        XCTAssertGreaterThanOrEqual(server.acceptedConnections - before, 11,
                                    "one connection per concurrent request (\(reused) of 12 reused one)")
    }
}
