import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A burst to one HTTP/2 origin (real nginx, TLS, ALPN) rides few connections: every request waits
/// for a connection that can multiplex instead of opening its own.
final class HTTP2MultiplexingTests: LibraryTestCase {
    private var nginx: ExternalServer?

    override func tearDown() {
        nginx?.stop()
        super.tearDown()
    }

    private func startNginx(streams: Int) throws -> (ExternalServer, SecurityPolicy) {
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking HTTP/2 Test Root")
        let leaf = try authority.issue()
        let server = try ExternalServer.nginxHTTP2(certificatePEM: CertificateData.pem([leaf.certificate]),
                                                   keyPEM: leaf.privateKeyPEM, streams: streams)
        nginx = server
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        return (server, policy)
    }

    /// `count` GETs of /small at once on an unlimited queue; every one must succeed over HTTP/2.
    private func burst(_ count: Int, to server: ExternalServer, policy: SecurityPolicy) throws {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        let done = expectation(description: "\(count) responses")
        done.expectedFulfillmentCount = count
        let failures = Recorder<String>()
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)/small"))
        for _ in 0..<count {
            let operation = HTTPRequestOperation(request: URLRequest(url: url))
            operation.securityPolicy = policy
            operation.setCompletionBlockWithSuccess({ operation, _ in
                if operation.responseData?.count != 1024 || operation.metrics?.httpVersion != "2" {
                    failures.append("\(operation.responseData?.count ?? -1) bytes over HTTP/\(operation.metrics?.httpVersion ?? "?")")
                }
                done.fulfill()
            }, failure: { _, error in
                failures.append("\(error)")
                done.fulfill()
            })
            queue.addOperation(operation)
        }
        wait(for: [done], timeout: 60)
        XCTAssertEqual(failures.all, [])
    }

    func testTwoHundredConcurrentRequestsShareAtMostFourConnections() throws {
        let (server, policy) = try startNginx(streams: 128)
        for round in 1...3 {   // the same on every run, not once in a while
            try burst(200, to: server, policy: policy)
            XCTAssertTrue(eventually { server.accessLog.filter { $0.contains("/small") }.count == 200 * round })
            let lines = server.accessLog.filter { $0.contains("/small") }.suffix(200)
            let used = Set(lines.compactMap { $0.split(separator: " ").first }).count
            XCTAssertLessThanOrEqual(used, 4, "round \(round): 200 requests over \(used) connections")
        }
    }

    func testTheServersStreamLimitIsRespected() throws {
        // 10 streams per connection: 60 requests at once all succeed (a stream past the server's limit
        // would be refused) on at most the per-host connections.
        let (server, policy) = try startNginx(streams: 10)
        try burst(60, to: server, policy: policy)
        XCTAssertTrue(eventually { server.accessLog.filter { $0.contains("/small") }.count == 60 })
        XCTAssertLessThanOrEqual(server.connections(serving: "/small").count, NetworkThread.multiplexedConnectionsPerHost)
    }

    func testTheCapHoldsForABurstRightAfterPlainHTTPRequests() throws {
        // Plain http lifts the per-host cap, and with nothing left on curl its restore waits for the
        // next transfer that can multiplex: that transfer must restore it before curl runs any of the
        // burst, or 60 requests at 10 streams a connection open 6 connections.
        let plain = try TestServer()
        defer { plain.shutdown() }
        for _ in 0..<3 {
            let done = expectation(description: "plain response")
            let operation = HTTPRequestOperation(request: URLRequest(url: plain.url("/bytes/16")))
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, _ in done.fulfill() })
            operation.start()
            wait(for: [done], timeout: 10)
        }
        XCTAssertEqual(plain.requests.count, 3)
        let (server, policy) = try startNginx(streams: 10)
        try burst(60, to: server, policy: policy)
        XCTAssertTrue(eventually { server.accessLog.filter { $0.contains("/small") }.count == 60 })
        XCTAssertLessThanOrEqual(server.connections(serving: "/small").count, NetworkThread.multiplexedConnectionsPerHost)
    }

    func testAThousandConcurrentRequestsRideFewConnections() throws {
        let (server, policy) = try startNginx(streams: 128)
        try burst(1000, to: server, policy: policy)
        XCTAssertTrue(eventually { server.accessLog.filter { $0.contains("/small") }.count == 1000 })
        let used = server.connections(serving: "/small").count
        XCTAssertLessThanOrEqual(used, 8)
    }
}
