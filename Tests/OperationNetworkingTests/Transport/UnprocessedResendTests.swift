import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A request the server never processed (a stream it refused, or one above its GOAWAY's last stream)
/// is sent again until a server processes it: nothing of a burst is lost, and
/// nothing is processed twice.
final class UnprocessedResendTests: LibraryTestCase {
    private var servers: [ExternalServer] = []

    override func tearDown() {
        servers.forEach { $0.stop() }
        servers.removeAll()
        super.tearDown()
    }

    /// The HTTP/2 server that refuses streams on purpose (Fixtures are not part of the test bundle).
    private static let refusingServerScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures/refusing_h2_server.py")

    /// A leaf certificate for 127.0.0.1 and a policy trusting its authority.
    private func identity() throws -> (TestIdentity, SecurityPolicy) {
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking Resend Test Root")
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        return (try authority.issue(), policy)
    }

    /// Starts `refusing_h2_server.py`: GOAWAY after each connection's `streamsPerConnection`th
    /// stream, RST_STREAM(REFUSED_STREAM) on every `refuseEvery`th.
    private func startRefusingServer(streamsPerConnection: Int, refuseEvery: Int) throws -> (ExternalServer, SecurityPolicy) {
        let (leaf, policy) = try identity()
        let script = UnprocessedResendTests.refusingServerScript.path
        let server = try ExternalServer(executable: "/usr/bin/python3", name: "refusing-h2",
                                        arguments: { [script, $0] }) { port, directory in
            let cert = directory.appendingPathComponent("cert.pem"), key = directory.appendingPathComponent("key.pem")
            try CertificateData.pem([leaf.certificate]).write(to: cert, atomically: true, encoding: .utf8)
            try leaf.privateKeyPEM.write(to: key, atomically: true, encoding: .utf8)
            let configuration: [String: Any] = [
                "port": port, "cert": cert.path, "key": key.path,
                "log": directory.appendingPathComponent("processed.log").path,
                "streams_per_connection": streamsPerConnection, "refuse_every": refuseEvery,
            ]
            return String(decoding: try JSONSerialization.data(withJSONObject: configuration), as: UTF8.self)
        }
        servers.append(server)
        return (server, policy)
    }

    /// What the refusing server answers a GET of `path` with (its `body_for`).
    private static func expectedBody(for path: String) -> Data {
        let seed = path.utf8.reduce(0) { $0 + Int($1) }
        let length = 1000 + seed * 37 % 3000
        return Data((0..<length).map { UInt8(($0 * 31 + seed) % 251) })
    }

    /// A body no other request of the test sends.
    private static func uniqueBody(_ name: String) -> Data {
        Data("\(name) ".utf8) + Data((0..<(500 + name.utf8.count * 97 % 1500)).map { UInt8($0 % 256) })
    }

    /// The requests the refusing server processed: method, path and body of each, in its log's order.
    private static func processed(by server: ExternalServer) -> [(method: String, path: String, body: String)] {
        let text = (try? String(contentsOf: server.directory.appendingPathComponent("processed.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 3 else { return nil }
            return (String(fields[0]), String(fields[1]), String(fields[2]))
        }
    }

    /// Runs `requests` at once on an unlimited queue; the failures, as "path: what went wrong".
    private func burst(_ requests: [(URLRequest, expected: Data)], policy: SecurityPolicy, timeout: TimeInterval = 60) -> [String] {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = requests.count
        let done = expectation(description: "\(requests.count) responses")
        done.expectedFulfillmentCount = requests.count
        let failures = Recorder<String>()
        for (request, expected) in requests {
            let operation = HTTPRequestOperation(request: request)
            operation.securityPolicy = policy
            let path = request.url?.path ?? "?"
            operation.setCompletionBlockWithSuccess({ operation, _ in
                if operation.responseData != expected {
                    failures.append("\(path): \(operation.responseData?.count ?? -1) bytes, not the \(expected.count) sent")
                }
                done.fulfill()
            }, failure: { _, error in
                failures.append("\(path): \(error)")
                done.fulfill()
            })
            queue.addOperation(operation)
        }
        wait(for: [done], timeout: timeout)
        return failures.all
    }

    func testNothingIsLostWhenNginxEndsEachConnectionAfterTenRequests() throws {
        let (leaf, policy) = try identity()
        let nginx = try ExternalServer.nginxHTTP2(certificatePEM: CertificateData.pem([leaf.certificate]),
                                                  keyPEM: leaf.privateKeyPEM, keepaliveRequests: 10)
        servers.append(nginx)
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(nginx.port)/small"))
        let small = Data(repeating: 0x61, count: 1024)
        let failures = burst(Array(repeating: (URLRequest(url: url), small), count: 1000), policy: policy)
        XCTAssertEqual(failures.count, 0, "lost: \(failures.prefix(5))")
        XCTAssertTrue(eventually { nginx.accessLog.filter { $0.contains("/small") }.count >= 1000 })
        let answered = nginx.accessLog.filter { $0.contains("/small") }
        XCTAssertEqual(answered.count, 1000, "nginx processed each request once")
        XCTAssertEqual(answered.filter { $0.contains(" 200 ") }.count, answered.count)
    }

    func testNothingIsLostOrProcessedTwiceWhenAServerRefusesStreams() throws {
        let (server, policy) = try startRefusingServer(streamsPerConnection: 10, refuseEvery: 3)
        let base = "https://127.0.0.1:\(server.port)"
        var requests: [(URLRequest, expected: Data)] = []
        var posted: [String: Data] = [:]
        for index in 0..<300 {
            if index % 3 == 0 {
                let path = "/upload/\(index)"
                var request = URLRequest(url: try XCTUnwrap(URL(string: base + path)))
                request.httpMethod = "POST"
                let body = UnprocessedResendTests.uniqueBody(path)
                request.httpBody = body
                posted[path] = body
                requests.append((request, body))   // the server answers with the body it processed
            } else {
                let path = "/item/\(index)"
                requests.append((URLRequest(url: try XCTUnwrap(URL(string: base + path))),
                                 UnprocessedResendTests.expectedBody(for: path)))
            }
        }
        let failures = burst(requests, policy: policy)
        XCTAssertEqual(failures.count, 0, "lost: \(failures.prefix(5))")
        let processed = UnprocessedResendTests.processed(by: server)
        XCTAssertEqual(processed.count, 300, "each request processed exactly once")
        XCTAssertEqual(Set(processed.map(\.path)).count, 300, "no request processed twice")
        for (path, body) in posted {
            let received = processed.filter { $0.path == path }
            XCTAssertEqual(received.count, 1, "\(path) processed \(received.count) times")
            XCTAssertEqual(received.first?.method, "POST")
            XCTAssertEqual(received.first?.body, body.map { String(format: "%02x", $0) }.joined(), "\(path)'s body")
        }
    }
}
