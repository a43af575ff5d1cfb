import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A real download from nginx (HTTP/2 over TLS, `Range` as a production server answers it), paused,
/// archived, restored in a new operation and resumed: the result is checked byte for byte against the
/// file nginx served, in memory and to a file.
final class RealServerResumeTests: LibraryTestCase {
    private var nginx: ExternalServer?

    override func tearDown() {
        nginx?.stop()
        super.tearDown()
    }

    private func pausedArchiveRestored(_ body: Data, to path: String?) throws -> HTTPRequestOperation {
        let authority = try TestCertificateAuthority(commonName: "OperationNetworking Resume Test Root")
        let leaf = try authority.issue()
        let server = try ExternalServer.nginxHTTP2(certificatePEM: CertificateData.pem([leaf.certificate]),
                                                   keyPEM: leaf.privateKeyPEM, large: body)
        nginx = server
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        let url = try XCTUnwrap(URL(string: "https://127.0.0.1:\(server.port)/large"))
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.securityPolicy = policy
        if let path { operation.outputStream = OutputStream(toFileAtPath: path, append: false) }
        let (originalDone, _) = recordOutcome(of: operation)
        startAndAwaitBytes(operation, atLeast: 1_000_000, timeout: 20)
        operation.pause()
        let archive = try SafeArchive.archive(operation)
        operation.cancel()
        wait(for: [originalDone], timeout: 10)
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(restored.resumePointForTesting?.offset), 1_000_000)
        restored.securityPolicy = policy
        if let path { restored.outputStream = OutputStream(toFileAtPath: path, append: true) }
        let (done, box) = recordOutcome(of: restored)
        restored.resume()
        wait(for: [done], timeout: 30)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(restored.response?.statusCode, 206, "continued with a Range request")
        // nginx logs a request once it has sent the response, which the client may have read before.
        XCTAssertTrue(eventually { server.accessLog.last.map { $0.contains(" 206 ") && $0.contains("bytes=") } == true },
                      "nginx answered the continuation's Range with a 206")
        return restored
    }

    private func randomBody() -> Data {
        var generator = SplitMix64(seed: 0x5EED)
        return Data((0..<(6 << 20)).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
    }

    func testAPausedArchivedRestoredDownloadIsByteExactInMemory() throws {
        let body = randomBody()
        let restored = try pausedArchiveRestored(body, to: nil)
        XCTAssertEqual(restored.responseData?.count, body.count)
        XCTAssertTrue(restored.responseData == body, "the resumed body differs from the file nginx served")
    }

    func testAPausedArchivedRestoredDownloadIsByteExactToAFile() throws {
        let body = randomBody()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try pausedArchiveRestored(body, to: path)
        let written = try XCTUnwrap(FileManager.default.contents(atPath: path))
        XCTAssertEqual(written.count, body.count)
        XCTAssertTrue(written == body, "the resumed file differs from the file nginx served")
    }
}
