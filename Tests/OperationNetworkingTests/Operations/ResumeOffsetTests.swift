import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A caller's own `Range` (AFNetworking's pattern for appending to a partial file) is honoured on
/// the first request and continued, not restarted from the operation's own byte count, on resume.
final class ResumeOffsetTests: ServerTestCase {
    private let size = 400_000

    /// Starts `operation`, pauses it once 20,000 bytes arrived, resumes it and waits for its handlers.
    private func pauseAndResume(_ operation: HTTPRequestOperation) -> Outcome {
        let (done, box) = startAndPause(operation)
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        operation.resume()
        wait(for: [done], timeout: 20)
        return box.value ?? .failure(URLError(.unknown))
    }

    func testAppendingToAPartialFileWithTheCallersRangeEndsByteExact() throws {
        let prefix = 100_000
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try deterministicBytes(prefix).write(to: URL(fileURLWithPath: path))
        var request = request("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5")
        request.setValue("bytes=\(prefix)-", forHTTPHeaderField: "Range")
        let operation = HTTPRequestOperation(request: request)
        operation.outputStream = OutputStream(toFileAtPath: path, append: true)

        XCTAssertTrue(pauseAndResume(operation).isSuccess)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), deterministicBytes(size))
        let ranges = server.requests.map { $0.header("Range") ?? "none" }
        XCTAssertEqual(ranges.count, 2)
        XCTAssertEqual(ranges.first, "bytes=\(prefix)-")
        let resumedAt = try XCTUnwrap(ranges.last.flatMap { Int($0.dropFirst(6).dropLast()) }, "\(ranges)")
        XCTAssertGreaterThan(resumedAt, prefix + 20_000 - 1, "continued after the caller's start, not from the byte count")
        XCTAssertNotNil(server.requests.last?.header("If-Range"))
    }

    /// A download of bytes 1000…299999 of the resource, slow enough to be paused.
    private func closedRangeRequest() -> URLRequest {
        var request = request("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5")
        request.setValue("bytes=1000-299999", forHTTPHeaderField: "Range")
        return request
    }

    func testAClosedCallerRangeIsContinuedToItsEnd() throws {
        let operation = HTTPRequestOperation(request: closedRangeRequest())

        XCTAssertTrue(pauseAndResume(operation).isSuccess)
        XCTAssertEqual(operation.responseData, deterministicBytes(299_000, from: 1000))
        let resumed = try XCTUnwrap(server.requests.last?.header("Range"))
        XCTAssertTrue(resumed.hasPrefix("bytes=") && resumed.hasSuffix("-299999"), resumed)
        XCTAssertEqual(server.requests.count, 2)
    }

    /// The second of two requests with the same `Range` field knows the caller's range as the first
    /// did, so its resume continues after the range's start and stops at its end.
    func testASecondRequestWithTheSameRangeIsContinuedFromItsOwnStart() throws {
        let request = closedRangeRequest()
        let first = HTTPRequestOperation(request: request)
        XCTAssertTrue(run(first).isSuccess)
        XCTAssertEqual(first.responseData, deterministicBytes(299_000, from: 1000))

        let second = HTTPRequestOperation(request: request)
        XCTAssertTrue(pauseAndResume(second).isSuccess)
        XCTAssertEqual(second.responseData, deterministicBytes(299_000, from: 1000))
        let ranges = server.requests.map { $0.header("Range") ?? "none" }
        XCTAssertEqual(ranges.count, 3, "\(ranges)")
        XCTAssertEqual(ranges[1], "bytes=1000-299999")
        let resumed = try XCTUnwrap(ranges.last)
        let resumedAt = try XCTUnwrap(Int(resumed.dropFirst(6).prefix { $0 != "-" }), resumed)
        XCTAssertGreaterThan(resumedAt, 1000 + 20_000 - 1, "continued from the byte count, not the range's start")
        XCTAssertTrue(resumed.hasSuffix("-299999"), resumed)
    }

    /// Paused before the response head arrived: the resume sends the caller's own Range again.
    func testPausedBeforeAnyByteTheResumeKeepsTheCallersRange() throws {
        let prefix = 100_000
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try deterministicBytes(prefix).write(to: URL(fileURLWithPath: path))
        var request = request("/bytes/\(size)?headDelayMs=300")
        request.setValue("bytes=\(prefix)-", forHTTPHeaderField: "Range")
        let operation = HTTPRequestOperation(request: request)
        operation.outputStream = OutputStream(toFileAtPath: path, append: true)
        let (done, box) = recordOutcome(of: operation)
        let pausedNotice = expectation(forNotification: .operationDidFinish, object: operation)
        operation.start()
        let server = self.server!
        XCTAssertTrue(eventually { server.requests.count == 1 })
        operation.pause()
        wait(for: [pausedNotice], timeout: 5)
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        operation.resume()
        wait(for: [done], timeout: 20)

        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(server.requests.compactMap { $0.header("Range") }, ["bytes=\(prefix)-", "bytes=\(prefix)-"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), deterministicBytes(size))
    }

    /// A suffix range cannot be continued: the resume asks for the same range again, and the bytes
    /// already in the sink are not duplicated.
    func testASuffixRangeIsAskedForAgainWithoutDuplicatingBytes() throws {
        var request = request("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5")
        request.setValue("bytes=-300000", forHTTPHeaderField: "Range")
        let operation = HTTPRequestOperation(request: request)

        XCTAssertTrue(pauseAndResume(operation).isSuccess)
        XCTAssertEqual(server.requests.compactMap { $0.header("Range") }, ["bytes=-300000", "bytes=-300000"])
        XCTAssertEqual(operation.responseData, deterministicBytes(300_000, from: size - 300_000))
    }
}
