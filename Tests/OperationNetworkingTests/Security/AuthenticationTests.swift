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
