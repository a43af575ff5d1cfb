import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// An HTTP/2 stream its server reset is sent again only when the server says it did not process it
/// (`REFUSED_STREAM`, RFC 9113 §8.7) or when the retry policy says so: a GET reset with
/// `INTERNAL_ERROR` on a kept-alive connection reaches the server once.
final class StreamResetResendTests: LibraryTestCase {
    private var server: ExternalServer?
    private var policy = SecurityPolicy.default()

    override func setUpWithError() throws {
        try super.setUpWithError()
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking Reset Test Root")
        let leaf = try authority.issue()
        policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/resetting_h2_server.py").path
        server = try ExternalServer(executable: "/usr/bin/python3", name: "resetting-h2",
                                    arguments: { [script, $0] }) { port, directory in
            let cert = directory.appendingPathComponent("cert.pem"), key = directory.appendingPathComponent("key.pem")
            try CertificateData.pem([leaf.certificate]).write(to: cert, atomically: true, encoding: .utf8)
            try leaf.privateKeyPEM.write(to: key, atomically: true, encoding: .utf8)
            let configuration: [String: Any] = ["port": port, "cert": cert.path, "key": key.path,
                                                "log": directory.appendingPathComponent("received.log").path]
            return String(decoding: try JSONSerialization.data(withJSONObject: configuration), as: UTF8.self)
        }
    }

    override func tearDown() {
        server?.stop()
        server = nil
        super.tearDown()
    }

    /// What the server received, in order: connection number, path and whether it reset or answered.
    private func received() -> [(connection: String, path: String, outcome: String)] {
        guard let server else { return [] }
        let text = (try? String(contentsOf: server.directory.appendingPathComponent("received.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 4 else { return nil }
            return (String(fields[0]), String(fields[2]), String(fields[3]))
        }
    }

    /// Runs a GET of `path` and waits for its end: nil on success, else the error.
    private func get(_ path: String, retryPolicy: RetryPolicy = .none) throws -> Error? {
        let server = try XCTUnwrap(server)
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)\(path)"))))
        operation.securityPolicy = policy
        operation.retryPolicy = retryPolicy
        let done = expectation(description: path)
        let box = OutcomeBox()
        operation.setCompletionBlockWithSuccess({ _, _ in
            box.set(.success(SendableAny(nil)))
            done.fulfill()
        }, failure: { _, error in
            box.set(.failure(error))
            done.fulfill()
        })
        operation.start()
        wait(for: [done], timeout: 20)
        return box.value?.error
    }

    func testAGetResetWithInternalErrorOnAKeptAliveConnectionReachesTheServerOnce() throws {
        XCTAssertNil(try get("/warm"), "the first request makes the connection the next one reuses")
        let error = try get("/reset/internal/1/a")
        XCTAssertEqual((error as? URLError)?.code, .networkConnectionLost)
        let arrivals = received().filter { $0.path == "/reset/internal/1/a" }
        XCTAssertEqual(arrivals.map(\.outcome), ["reset"], "sent once, not again after the reset")
    }

    func testTheRetryPolicySendsAResetGetAgainWhenItSaysSo() throws {
        XCTAssertNil(try get("/warm"))
        XCTAssertNil(try get("/reset/internal/1/b", retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: 0)))
        let arrivals = received().filter { $0.path == "/reset/internal/1/b" }
        XCTAssertEqual(arrivals.map(\.outcome), ["reset", "answered"], "the policy's second attempt")
    }

    func testARefusedStreamIsSentAgainAndAnsweredOnce() throws {
        XCTAssertNil(try get("/warm"))
        XCTAssertNil(try get("/reset/refused/1/c"), "a refused stream was never processed: sent again")
        let arrivals = received().filter { $0.path == "/reset/refused/1/c" }
        XCTAssertEqual(arrivals.map(\.outcome), ["reset", "answered"])
    }
}
