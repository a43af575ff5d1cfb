import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A server whose certificate (from a trusted CA) names other hosts is refused, before any request
/// byte, with a message that says the certificate does not match the host — also when libcurl first
/// tried a kept-alive connection the server had dropped, whose "Recv failure" / "Send failure"
/// message libcurl keeps for the whole transfer.
final class HostNameMismatchTests: LibraryTestCase {
    private static let authority = Result { try TestCertificateAuthority(commonName: "Host Name Mismatch Root") }

    /// The run's CA, a server certificate for 127.0.0.1 and one for example.com only, and the
    /// policy that trusts the CA.
    private func fixtures() throws -> (good: TestIdentity, wrongHost: TestIdentity, policy: SecurityPolicy) {
        let authority = try HostNameMismatchTests.authority.get()
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        return (try authority.issue(),
                try authority.issue(commonName: "example.com", dnsNames: ["example.com"], ipAddresses: ["10.9.9.9"]), policy)
    }

    private func assertSaysHostMismatch(_ error: Error?, host: String, file: StaticString = #filePath, line: UInt = #line) {
        let error = error as? URLError
        XCTAssertEqual(error?.code, .serverCertificateUntrusted, "\(String(describing: error))", file: file, line: line)
        let description = error?.localizedDescription ?? ""
        XCTAssertTrue(description.contains("does not match the host \(host)"), description, file: file, line: line)
        for stale in ["Send failure", "Recv failure", "Broken pipe", "reset by peer"] {
            XCTAssertFalse(description.contains(stale), description, file: file, line: line)
            XCTAssertFalse((error?.userInfo[CurlErrorMessageKey] as? String)?.contains(stale) ?? false,
                           "\(String(describing: error?.userInfo[CurlErrorMessageKey]))", file: file, line: line)
        }
        XCTAssertEqual(error?.userInfo[CurlErrorCodeKey] as? Int, 60, file: file, line: line)
    }

    func testACertificateForAnotherHostSaysSo() throws {
        let (_, wrongHost, policy) = try fixtures()
        let server = try TestServer(tls: wrongHost)
        defer { server.shutdown() }
        for host in ["127.0.0.1", "localhost"] {
            let error = fetch(try XCTUnwrap(URL(string: "https://\(host):\(server.port)/echo")), policy: policy)
            assertSaysHostMismatch(error, host: host)
        }
        XCTAssertEqual(server.requests.count, 0, "a refused server receives no request")
        // A chain no anchor verifies keeps curl's own account: it is not called a host mismatch.
        let untrusted = fetch(server.url("/echo"), policy: .default()) as? URLError
        XCTAssertEqual(untrusted?.code, .serverCertificateUntrusted)
        XCTAssertFalse(untrusted?.localizedDescription.contains("does not match the host") ?? true,
                       "\(String(describing: untrusted))")
    }

    /// The first request is answered on a connection that is then dropped; the second one is written on
    /// it, reset, and sent again by libcurl on a new connection to the same host and port, where the
    /// server now presents a certificate for another name.
    func testACertificateForAnotherHostAfterAResetReusedConnectionSaysSo() throws {
        let (good, wrongHost, policy) = try fixtures()
        let genuine = try TestServer(tls: good)
        defer { genuine.shutdown() }
        let impostor = try TestServer(tls: wrongHost)
        defer { impostor.shutdown() }
        let relay = try XCTUnwrap(SwitchingRelay(first: genuine.port, later: impostor.port))
        defer { relay.stop() }
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(relay.port)/echo"))
        XCTAssertNil(fetch(url, policy: policy))
        relay.resetFirstConnectionOnNextBytes()
        assertSaysHostMismatch(fetch(url, policy: policy), host: "127.0.0.1")
        XCTAssertEqual(relay.resetCount, 1, "the second request went out on the kept-alive connection, which was reset")
        XCTAssertEqual(relay.connections, 2)
        XCTAssertEqual(genuine.requests.count, 1)
        XCTAssertEqual(impostor.requests.count, 0, "a refused server receives no request")
    }
}
