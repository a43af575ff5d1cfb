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

    /// Resends share connections as first sends do (the issue saw each of 39 resends after an HTTP/2
    /// reset open a connection of its own, `CURLOPT_FRESH_CONNECT` on every resend). Each stream of a
    /// burst is refused six times: libcurl sends it again five times itself (closing the connection
    /// each time), then gives up, and the library's resend sends it once more. Those resends share
    /// connections: half as many connections as resends at most (a burst of first sends opens up to
    /// the per-host cap; the rounds of libcurl's own resends spread them over a few more), never one each.
    func testResendsOfABurstOfRefusedStreamsShareConnections() throws {
        XCTAssertNil(try get("/warm"), "the origin is known to speak HTTP/2: the burst multiplexes")
        let server = try XCTUnwrap(server)
        let count = 24
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = count
        let done = expectation(description: "the burst")
        done.expectedFulfillmentCount = count
        let failures = Recorder<String>()
        for index in 0..<count {
            let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)/reset/refused/6/burst\(index)"))
            let operation = HTTPRequestOperation(request: URLRequest(url: url))
            operation.securityPolicy = policy
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, error in
                failures.append("burst\(index): \(error)")
                done.fulfill()
            })
            queue.addOperation(operation)
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(failures.all, [], "every refused stream is sent again and answered")
        let burst = received().filter { $0.path.hasPrefix("/reset/refused/6/burst") }
        XCTAssertEqual(burst.filter { $0.outcome == "reset" }.count, 6 * count, "libcurl's own sends, refused")
        let resends = burst.filter { $0.outcome == "answered" }
        XCTAssertEqual(resends.count, count, "the library's resend of each, answered")
        let connections = Set(resends.map(\.connection))
        XCTAssertLessThanOrEqual(connections.count, count / 2,
                                 "\(count) resends over \(connections.count) connections: \(resends.map(\.connection))")
    }

    func testARefusedStreamIsSentAgainAndAnsweredOnce() throws {
        XCTAssertNil(try get("/warm"))
        XCTAssertNil(try get("/reset/refused/1/c"), "a refused stream was never processed: sent again")
        let arrivals = received().filter { $0.path == "/reset/refused/1/c" }
        XCTAssertEqual(arrivals.map(\.outcome), ["reset", "answered"])
    }
}
