import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `onet request`'s TLS options against the test server's HTTPS front: the CA, pinning, `--verify`,
/// `--insecure`, and a client certificate for a server that asks for one.
final class OnetRequestTLSTests: LibraryTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    private func write(_ text: String, _ name: String) throws -> String {
        let file = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    func testCACertVerifyPinningAndInsecureOptionsApplyTheSecurityPolicy() throws {
        let authority = try TestCertificateAuthority(commonName: "onet request CA")
        let identity = try authority.issue()
        let tlsServer = try TestServer(tls: identity)
        defer { tlsServer.shutdown() }
        let target = "https://127.0.0.1:\(tlsServer.port)/echo"
        let caPEM = try write(CertificateData.pem([authority.certificate]), "ca.pem")
        let leafDER = directory.appendingPathComponent("leaf.der")
        try identity.certificate.write(to: leafDER)
        let stranger = try write(CertificateData.pem([try TestCertificateAuthority(commonName: "Stranger").certificate]), "s.pem")

        let untrusted = try runOnetCapturing(["request", "-I", target])
        XCTAssertEqual(untrusted.status, 1, "an unknown CA is refused (httpie's status)")
        XCTAssertEqual(untrusted.stderr.split(separator: "\n").count, 1, untrusted.stderr)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--cacert", caPEM, target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--verify", caPEM, target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--insecure", target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--verify=no", target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--cacert", caPEM, "--pin-cert", leafDER.path, target]).status, 0)
        XCTAssertEqual(try runOnetCapturing(["request", "-I", "--cacert", caPEM, "--pin-key", leafDER.path, target]).status, 0)
        let wrongPin = try runOnetCapturing(["request", "-I", "--insecure", "--pin-cert", stranger, target])
        XCTAssertEqual(wrongPin.status, 1, "--insecure never turns a pin off")
        XCTAssertEqual(tlsServer.requests.count, 6, "refused servers never receive the request")
    }

    func testCertAndCertKeyAnswerAServerThatAsksForAClientCertificate() throws {
        let authority = try TestCertificateAuthority(commonName: "onet mTLS CA")
        let clients = try TestCertificateAuthority(commonName: "onet clients")
        let client = try clients.issue(commonName: "ada", dnsNames: [], ipAddresses: [])
        let tlsServer = try TestServer(tls: try authority.issue(), clientCertificateAuthority: clients.certificate)
        defer { tlsServer.shutdown() }
        let target = "https://127.0.0.1:\(tlsServer.port)/echo"
        let caPEM = try write(CertificateData.pem([authority.certificate]), "ca.pem")
        let certPEM = try write(CertificateData.pem([client.certificate]), "client.pem")
        let keyPEM = try write(client.privateKeyPEM, "client.key")
        let combined = try write(CertificateData.pem([client.certificate]) + client.privateKeyPEM, "both.pem")

        XCTAssertNotEqual(try runOnetCapturing(["request", "-I", "--verify", caPEM, target]).status, 0,
                          "without a certificate the server refuses the handshake")
        XCTAssertEqual(tlsServer.requests.count, 0)
        let separate = try runOnetCapturing(["request", "-I", "--verify", caPEM, "--cert", certPEM, "--cert-key", keyPEM, target])
        XCTAssertEqual(separate.status, 0, separate.stderr)
        let together = try runOnetCapturing(["request", "-I", "--verify", caPEM, "--cert", combined, target])
        XCTAssertEqual(together.status, 0, together.stderr)
        XCTAssertEqual(tlsServer.requests.count, 2)
        let missing = try runOnetCapturing(["request", "-I", "--verify", caPEM, "--cert", directory.path + "/none.pem", target])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("none.pem") && missing.stderr.split(separator: "\n").count == 1, missing.stderr)
    }
}
