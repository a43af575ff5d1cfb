import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// AFDownloadRequestOperation, ported: it appends to a partial file with its own `Range`, and when the
/// server answers with the whole resource (`200`) it truncates the file before the body arrives — in
/// AFN an override of `connection:didReceiveResponse:`, here of `operationDidReceiveResponse(_:)`.
private final class PartialFileDownload: HTTPRequestOperation, @unchecked Sendable {   // every access goes through `lock`
    private let lock = NSLock()
    private var storedPath = ""   // guarded by lock
    private var storedStatuses: [Int] = []   // guarded by lock

    /// The partial file; the output stream appends to it.
    var path: String {
        get { lock.withLock { storedPath } }
        set {
            lock.withLock { storedPath = newValue }
            outputStream = OutputStream(toFileAtPath: newValue, append: true)
        }
    }

    /// The status of every response the override was asked about, in order.
    var statuses: [Int] { lock.withLock { storedStatuses } }

    override func operationDidReceiveResponse(_ response: HTTPURLResponse) -> ResponseDisposition {
        let decided = super.operationDidReceiveResponse(response)
        lock.withLock { storedStatuses.append(response.statusCode) }
        guard case .allow = decided, response.statusCode == 200 else { return decided }
        // The whole resource is coming: what the file holds would end up in front of it.
        do {
            let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            defer { try? file.close() }
            try file.truncate(atOffset: 0)
        } catch {
            return .fail(error)
        }
        return .restartOutput
    }
}

/// The moment between a response's head and its body: the override and the block run after the head
/// and before the first body byte, can refuse the response or start the output over.
final class DidReceiveResponseTests: TemporaryDirectoryTestCase {
    private let size = 400_000
    private let prefix = 100_000

    /// A partial file of the `/bytes` resource's first `prefix` bytes, and a download that continues it.
    private func partialDownload(_ query: String) throws -> PartialFileDownload {
        let path = directory.appendingPathComponent("partial").path
        try deterministicBytes(prefix).write(to: URL(fileURLWithPath: path))
        var request = request("/bytes/\(size)\(query)")
        request.setValue("bytes=\(prefix)-", forHTTPHeaderField: "Range")
        let operation = PartialFileDownload(request: request)
        operation.path = path
        return operation
    }

    func testThePortedDownloaderTruncatesItsFileWhenItsRangeIsAnsweredWithTheWholeBody() throws {
        let operation = try partialDownload("?ignoreRange=1")

        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(server.requests.first?.header("Range"), "bytes=\(prefix)-")
        XCTAssertEqual(operation.statuses, [200])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: operation.path)), deterministicBytes(size))
    }

    func testThePortedDownloaderKeepsItsFileWhenItsRangeIsHonoured() throws {
        let operation = try partialDownload("")

        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(operation.statuses, [206])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: operation.path)), deterministicBytes(size))
    }

    /// A paused download whose continuation is answered `200`: without the override's restart the
    /// library would skip the bytes the (now truncated) file held, and the file would lack its start.
    func testARestartedOutputTakesTheWholeBodyAfterAPause() throws {
        let operation = try partialDownload("?ignoreRange=1&chunkSize=4000&chunkDelayMs=5")
        let (done, box) = startAndPause(operation)
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        operation.resume()
        wait(for: [done], timeout: 20)

        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(operation.statuses, [200, 200])
        XCTAssertEqual(server.requests.count, 2)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: operation.path)), deterministicBytes(size))
    }

    private struct UnexpectedType: Error, Equatable {
        let contentType: String?
    }

    func testTheBlockRefusesAResponseBeforeAnyBodyByteIsWritten() throws {
        let path = directory.appendingPathComponent("refused").path
        let operation = HTTPRequestOperation(request: request("/bytes/\(size)"))
        operation.outputStream = OutputStream(toFileAtPath: path, append: false)
        operation.setDidReceiveResponseBlock { _, response in
            let type = response.value(forHTTPHeaderField: "Content-Type")
            return type == "application/json" ? .allow : .fail(UnexpectedType(contentType: type))
        }
        let progress = Recorder<Int64>()
        operation.setDownloadProgressBlock { _, total, _ in progress.append(total) }

        let outcome = run(operation)
        XCTAssertEqual(outcome.error as? UnexpectedType, UnexpectedType(contentType: "application/octet-stream"))
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)).count, 0)
        XCTAssertEqual(progress.all, [])
        XCTAssertNil(operation.responseData)
    }

    /// A refusal is the caller's word, not a transport failure: no retry policy sends the request
    /// again, even when the block's error has a code the policy retries.
    func testARefusalIsNotRetried() {
        let operation = HTTPRequestOperation(request: request("/bytes/1000"))
        operation.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01)
        operation.setDidReceiveResponseBlock { _, _ in .fail(URLError(.networkConnectionLost)) }

        XCTAssertEqual(run(operation).urlErrorCode, .networkConnectionLost)
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertEqual(operation.attempts, 1)
    }

    func testTheBlockRunsBeforeTheFirstBodyByteAndTheFirstProgressCall() throws {
        let path = directory.appendingPathComponent("ordered").path
        let operation = HTTPRequestOperation(request: request("/bytes/\(size)"))
        operation.outputStream = OutputStream(toFileAtPath: path, append: false)
        let events = Recorder<String>()
        operation.setDidReceiveResponseBlock { _, _ in
            let written = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
            events.append("response with \(written) bytes written")
            return .allow
        }
        operation.setDownloadProgressBlock { _, _, _ in events.append("progress") }

        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(events.all.first, "response with 0 bytes written")
        XCTAssertEqual(events.all.filter { $0.hasPrefix("response") }.count, 1)
        XCTAssertTrue(events.all.contains("progress"))
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), deterministicBytes(size))
    }
}
