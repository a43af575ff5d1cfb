import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Mutual TLS: client certificates from data or files, with an optional key passphrase.
final class ClientCertificateTests: LibraryTestCase {
    private func fetch(_ server: TestServer, root: Data, certificate: ClientCertificate?) throws -> Error? {
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [root]
        return fetch(try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)/echo")), policy: policy,
                     clientCertificate: certificate)
    }

    func testServerRequiringAClientCertificate() throws {
        let serverCA = try TestCertificateAuthority(commonName: "Server CA")
        let clientCA = try TestCertificateAuthority(commonName: "Client CA")
        let server = try TestServer(tls: try serverCA.issue(), clientCertificateAuthority: clientCA.certificate)
        defer { server.shutdown() }
        let client = try clientCA.issue(commonName: "client", dnsNames: ["client.test"], ipAddresses: [])
        let pem = ClientCertificate(certificate: Data(CertificateData.pem([client.certificate]).utf8), certificateFormat: .pem,
                                    privateKey: Data(client.privateKeyPEM.utf8), privateKeyFormat: .pem)
        XCTAssertNil(try fetch(server, root: serverCA.certificate, certificate: pem))
        XCTAssertEqual(server.requests.count, 1)

        XCTAssertNotNil(try fetch(server, root: serverCA.certificate, certificate: nil))
        let stranger = try TestCertificateAuthority(commonName: "Stranger").issue(commonName: "x", dnsNames: ["x"], ipAddresses: [])
        let wrong = ClientCertificate(certificate: stranger.certificate, certificateFormat: .der,
                                      privateKey: Data(stranger.privateKeyPEM.utf8), privateKeyFormat: .pem)
        XCTAssertNotNil(try fetch(server, root: serverCA.certificate, certificate: wrong))
        XCTAssertEqual(server.requests.count, 1, "refused clients never got a request through")
    }

    func testEncryptedKeyFileWithPassphrase() throws {
        let openssl = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: openssl) else {
            throw XCTSkip("the openssl command is needed to encrypt a test key")
        }
        let serverCA = try TestCertificateAuthority(commonName: "Server CA")
        let clientCA = try TestCertificateAuthority(commonName: "Client CA")
        let server = try TestServer(tls: try serverCA.issue(), clientCertificateAuthority: clientCA.certificate)
        defer { server.shutdown() }
        let client = try clientCA.issue(commonName: "client", dnsNames: ["client.test"], ipAddresses: [])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-mtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let plainKey = directory.appendingPathComponent("key.pem")
        let encryptedKey = directory.appendingPathComponent("key-encrypted.pem")
        let certificateFile = directory.appendingPathComponent("client.der")
        try Data(client.privateKeyPEM.utf8).write(to: plainKey)
        try client.certificate.write(to: certificateFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", plainKey.path, "-out", encryptedKey.path,
                             "-passout", "pass:open sesame"]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let unlocked = try ClientCertificate(certificateFile: certificateFile, privateKeyFile: encryptedKey, passphrase: "open sesame")
        XCTAssertEqual(unlocked.certificateFormat, .der)
        XCTAssertEqual(unlocked.privateKeyFormat, .pem)
        XCTAssertNil(try fetch(server, root: serverCA.certificate, certificate: unlocked))
        // A new server, so no connection made with the right passphrase can be reused.
        let second = try TestServer(tls: try serverCA.issue(), clientCertificateAuthority: clientCA.certificate)
        defer { second.shutdown() }
        let locked = try ClientCertificate(certificateFile: certificateFile, privateKeyFile: encryptedKey, passphrase: "wrong")
        XCTAssertNotNil(try fetch(second, root: serverCA.certificate, certificate: locked))
        XCTAssertEqual(second.requests.count, 0)
        XCTAssertThrowsError(try ClientCertificate(certificateFile: directory.appendingPathComponent("missing"), privateKeyFile: plainKey))
    }
}
