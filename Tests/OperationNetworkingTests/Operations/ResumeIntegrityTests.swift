import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Defence in depth for resumed downloads: whatever goes wrong elsewhere, a continuation that does
/// not fit the kept bytes, or a download that does not reach its known length, fails; it never ends
/// in `success` with the wrong bytes.
final class ResumeIntegrityTests: ServerTestCase {
    private let size = 200_000

    /// Pauses a download of `query`'s variant of /bytes, resumes it and returns how it ended.
    private func pauseAndResume(_ query: String, to stream: OutputStream? = nil) throws -> (HTTPRequestOperation, Outcome) {
        let operation = HTTPRequestOperation(request: request("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5&\(query)"))
        operation.outputStream = stream
        let (done, box) = startAndPause(operation)
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        XCTAssertEqual(operation.resumePointForTesting?.totalLength, Int64(size), "the first response said the length")
        operation.resume()
        wait(for: [done], timeout: 20)
        return (operation, try XCTUnwrap(box.value))
    }

    func testAContinuationStartingElsewhereFails() throws {
        let (_, outcome) = try pauseAndResume("rangeSkew=100")
        XCTAssertEqual(outcome.urlErrorCode, .badServerResponse, "\(String(describing: outcome.error))")
        let range = try XCTUnwrap(server.requests.last?.header("Range"))
        XCTAssertTrue(range.hasPrefix("bytes="), range)
    }

    func testAContinuationStartingElsewhereFailsForAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (_, outcome) = try pauseAndResume("rangeSkew=100", to: try XCTUnwrap(OutputStream(toFileAtPath: path, append: false)))
        XCTAssertEqual(outcome.urlErrorCode, .badServerResponse)
    }

    func testAContinuationEndingBeforeTheKnownLengthFails() throws {
        let (operation, outcome) = try pauseAndResume("rangeShort=100")
        XCTAssertEqual(outcome.urlErrorCode, .networkConnectionLost, "\(String(describing: outcome.error))")
        XCTAssertNil(operation.responseData, "no body is handed out as complete")
    }

    func testAnHonestContinuationStillSucceeds() throws {
        let (operation, outcome) = try pauseAndResume("etag=v1")
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertEqual(operation.responseData, deterministicBytes(size))
    }
}
