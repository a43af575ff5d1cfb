import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// 401 challenges: credentials, credential storage, the challenge block, origins; proxies.
final class AuthenticationTests: ServerTestCase {
    private func operation(_ path: String, credential: URLCredential? = nil) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request(path))
        operation.credential = credential
        return operation
    }

    private func credential(_ user: String, _ password: String) -> URLCredential {
        URLCredential(user: user, password: password, persistence: .none)
    }

    func testBasicCredentialAnswersTheChallenge() throws {
        let op = operation("/auth/basic/ada/secret", credential: credential("ada", "secret"))
        XCTAssertTrue(run(op).isSuccess)
        XCTAssertEqual(op.response?.statusCode, 200)
        let logged = server.requests
        XCTAssertEqual(logged.count, 2)
        XCTAssertNil(logged[0].header("Authorization"), "no credential is sent before the server asks")
        XCTAssertEqual(logged[1].header("Authorization"), "Basic " + Data("ada:secret".utf8).base64EncodedString())
    }

    func testWrongPasswordEndsInThe401WithoutLooping() throws {
        let op = operation("/auth/basic/ada/secret", credential: credential("ada", "wrong"))
        let outcome = run(op)
        XCTAssertEqual((outcome.error as NSError?)?.code, NSURLErrorBadServerResponse)
        XCTAssertEqual(op.response?.statusCode, 401)
        XCTAssertEqual(op.responseData, Data("{\"error\":\"unauthorized\"}".utf8))
        XCTAssertEqual(server.requests.count, 2)
    }

    func testDigestCredentialAnswersTheChallenge() throws {
        let op = operation("/auth/digest/ada/secret", credential: credential("ada", "secret"))
        XCTAssertTrue(run(op).isSuccess, "\(String(describing: op.error))")
        XCTAssertEqual(op.response?.statusCode, 200)
        XCTAssertTrue(server.requests.last?.header("Authorization")?.hasPrefix("Digest ") ?? false)
        XCTAssertFalse(server.requests.contains { $0.header("Authorization")?.hasPrefix("Basic") ?? false },
                       "Digest never sends the password")
    }

    func testWrongDigestPasswordEndsInThe401() throws {
        let op = operation("/auth/digest/ada/secret", credential: credential("ada", "wrong"))
        XCTAssertNotNil(run(op).error)
        XCTAssertEqual(op.response?.statusCode, 401)
        XCTAssertLessThanOrEqual(server.requests.count, 4)
    }

    func testWithoutCredentialThe401IsDelivered() {
        let op = operation("/auth/basic/ada/secret")
        XCTAssertNotNil(run(op).error)
        XCTAssertEqual(op.response?.statusCode, 401)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testCredentialStorageIsConsultedForTheProtectionSpace() throws {
        let space = URLProtectionSpace(host: "127.0.0.1", port: server.port, protocol: "http", realm: "onet",
                                       authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        // Foundation's storage keeps no credential whose persistence is .none.
        let stored = URLCredential(user: "grace", password: "hopper", persistence: .forSession)
        URLCredentialStorage.shared.setDefaultCredential(stored, for: space)
        defer { URLCredentialStorage.shared.remove(stored, for: space) }
        let op = operation("/auth/basic/grace/hopper")
        XCTAssertTrue(run(op).isSuccess)
        server.clearLog()
        let without = operation("/auth/basic/grace/hopper")
        without.shouldUseCredentialStorage = false
        XCTAssertNotNil(run(without).error)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testChallengeBlockCountsRoundsAndCanSupplyCredentials() throws {
        let op = operation("/auth/basic/ada/secret")
        let rounds = Recorder<Int>()
        op.setWillSendRequestForAuthenticationChallengeBlock { _, challenge in
            rounds.append(challenge.previousFailureCount)
            XCTAssertEqual(challenge.protectionSpace.realm, "onet")
            XCTAssertEqual(challenge.protectionSpace.authenticationMethod, NSURLAuthenticationMethodHTTPBasic)
            XCTAssertEqual((challenge.failureResponse as? HTTPURLResponse)?.statusCode, 401)
            let password = challenge.previousFailureCount == 0 ? "wrong" : "secret"
            return (.useCredential, URLCredential(user: "ada", password: password, persistence: .none))
        }
        XCTAssertTrue(run(op).isSuccess)
        XCTAssertEqual(rounds.all, [0, 1])
        XCTAssertEqual(server.requests.count, 3)
    }

    func testCancellingTheChallengeFailsDistinctlyAndSendsNothing() throws {
        let op = operation("/auth/basic/ada/secret", credential: credential("ada", "secret"))
        op.setWillSendRequestForAuthenticationChallengeBlock { _, _ in (.cancelAuthenticationChallenge, nil) }
        let outcome = run(op)
        XCTAssertEqual(outcome.urlErrorCode, .userCancelledAuthentication)
        XCTAssertEqual(op.response?.statusCode, 401, "the 401 is delivered as the response")
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertNil(server.requests.first?.header("Authorization"))
    }

    func testDefaultHandlingAndRejectFromTheBlock() throws {
        let byDefault = operation("/auth/basic/ada/secret", credential: credential("ada", "secret"))
        byDefault.setWillSendRequestForAuthenticationChallengeBlock { _, _ in (.performDefaultHandling, nil) }
        XCTAssertTrue(run(byDefault).isSuccess)
        let rejected = operation("/auth/basic/ada/secret", credential: credential("ada", "secret"))
        rejected.setWillSendRequestForAuthenticationChallengeBlock { _, _ in (.rejectProtectionSpace, nil) }
        XCTAssertNotNil(run(rejected).error)
        XCTAssertEqual(rejected.response?.statusCode, 401)
    }

    func testCredentialNeverFollowsARedirectToAnotherOrigin() throws {
        let target = "http://localhost:\(server.port)/auth/basic/ada/secret"
        let op = operation("/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")",
                           credential: credential("ada", "secret"))
        XCTAssertNotNil(run(op).error)
        XCTAssertEqual(op.response?.statusCode, 401)
        XCTAssertTrue(server.requests.allSatisfy { $0.header("Authorization") == nil })
    }

    func testProxyFromTheEnvironmentIsUsedAndNoProxyHonoured() throws {
        setenv("http_proxy", "http://127.0.0.1:\(server.port)", 1)
        defer { unsetenv("http_proxy"); unsetenv("no_proxy") }
        let viaProxy = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "http://onet-proxy.invalid:9/echo"))))
        XCTAssertTrue(run(viaProxy).isSuccess, "\(String(describing: viaProxy.error))")
        XCTAssertEqual(server.requests.first?.header("Host"), "onet-proxy.invalid:9")
        setenv("no_proxy", "onet-proxy.invalid", 1)
        let direct = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "http://onet-proxy.invalid:9/echo"))))
        XCTAssertEqual(run(direct).urlErrorCode, .cannotFindHost)
        XCTAssertEqual(server.requests.count, 1)
    }
}

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
