import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Without a proxy, a response that arrives on a reused TLS connection (no handshake in its transfer)
/// is the server's and is reported as such, head and all.
final class ReusedTLSConnectionTests: LibraryTestCase {
    func testAResponseOnAReusedTLSConnectionKeepsItsHead() throws {
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking Reuse Test Root")
        let server = try TestServer(tls: try authority.issue())
        defer { server.shutdown() }
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        for round in 1...3 {
            let operation = HTTPRequestOperation(request: URLRequest(url: server.url("/status/201")))
            operation.securityPolicy = policy
            operation.responseSerializer.acceptableStatusCodes = IndexSet(integersIn: 200..<300)
            let outcome = run(operation)
            XCTAssertTrue(outcome.isSuccess, "round \(round): \(String(describing: outcome.error))")
            XCTAssertEqual(operation.response?.statusCode, 201, "round \(round)")
            if round > 1 { XCTAssertEqual(operation.metrics?.connectionReused, true, "round \(round)") }
        }
        XCTAssertEqual(server.acceptedConnections, 1)
    }
}
