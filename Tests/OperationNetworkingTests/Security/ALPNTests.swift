import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// HTTP/2 is offered by ALPN on every TLS connection (libcurl speaks it when the server agrees).
final class ALPNTests: LibraryTestCase {
    func testClientOffersHTTP2ByALPN() throws {
        let authority = try TestCertificateAuthority(commonName: "ALPN Root")
        // A server that prefers h2 reports what the handshake chose; it then speaks only HTTP/1.1,
        // so the request itself is not the point here.
        let server = try TestServer(tls: try authority.issue(), applicationProtocols: ["h2", "http/1.1"])
        defer { server.shutdown() }
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        _ = fetch(try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)/echo")), policy: policy)
        XCTAssertEqual(server.negotiatedProtocols.first ?? nil, "h2", "the client offered h2")

        let http1 = try TestServer(tls: try authority.issue())
        defer { http1.shutdown() }
        let plain = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "https://127.0.0.1:\(http1.port)/echo"))))
        plain.securityPolicy = policy
        XCTAssertNil(run(plain).error)
        XCTAssertEqual(http1.negotiatedProtocols.first ?? nil, "http/1.1")
        XCTAssertEqual(plain.metrics?.httpVersion, "1.1")
    }
}
