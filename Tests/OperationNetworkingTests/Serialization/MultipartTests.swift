import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Multipart bodies on the wire: parts, exact length, streaming, failures.
final class MultipartTests: TemporaryDirectoryTestCase {
    private func file(_ name: String, _ data: Data) throws -> URL {
        let url = directory.appendingPathComponent(name)
        try data.write(to: url)
        return url
    }

    func testPartsArriveAsSentWithExactLength() throws {
        let photo = try file("photo.png", Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]))
        let serializer = HTTPRequestSerializer()
        let request = try serializer.multipartFormRequest(
            method: "POST", urlString: server.url("/upload").absoluteString, parameters: ["title": "a b", "n": 1]) { form in
            try form.appendPart(withFileURL: photo, name: "photo")
            form.appendPart(withFileData: Data("hello".utf8), name: "doc", fileName: "doc.txt", mimeType: "text/plain")
            form.appendPart(with: InputStream(data: Data("streamed".utf8)), name: "s", fileName: "s.bin", length: 8,
                            mimeType: "application/octet-stream")
            form.appendPart(withHeaders: ["Content-Disposition": "form-data; name=\"custom\"", "X-Part": "1"], body: Data("c".utf8))
        }
        XCTAssertNil(request.httpBody)
        let contentType = try XCTUnwrap(request.value(forHTTPHeaderField: "Content-Type"))
        XCTAssertTrue(contentType.hasPrefix("multipart/form-data; boundary=Boundary+"))
        let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
        XCTAssertTrue(run(request).1.isSuccess)
        let logged = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(logged.header("Content-Length"), String(logged.body.count), "Content-Length is exact")
        let text = String(decoding: logged.body, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("--\(boundary)\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\n1\r\n"), text)
        XCTAssertTrue(text.contains("name=\"title\"\r\n\r\na b\r\n"))
        XCTAssertTrue(text.contains("name=\"photo\"; filename=\"photo.png\"\r\nContent-Type: image/png\r\n\r\n"))
        XCTAssertTrue(logged.body.range(of: Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3])) != nil)
        XCTAssertTrue(text.contains("filename=\"doc.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n"))
        XCTAssertTrue(text.contains("filename=\"s.bin\"\r\nContent-Type: application/octet-stream\r\n\r\nstreamed\r\n"))
        XCTAssertTrue(text.contains("X-Part: 1\r\n\r\nc\r\n"))
        XCTAssertTrue(text.hasSuffix("\r\n--\(boundary)--\r\n"))
    }

    func testBoundaryIsNewForEveryRequest() throws {
        let serializer = HTTPRequestSerializer()
        let build = {
            try serializer.multipartFormRequest(method: "POST", urlString: "http://example.com/", parameters: ["a": "1"], constructingBodyWith: nil)
                .value(forHTTPHeaderField: "Content-Type")
        }
        XCTAssertNotEqual(try build(), try build())
    }

    func testMissingFileAndBadMethodsAreErrorsAtBuildTime() throws {
        let serializer = HTTPRequestSerializer()
        XCTAssertThrowsError(try serializer.multipartFormRequest(method: "POST", urlString: "http://example.com/", parameters: nil) {
            try $0.appendPart(withFileURL: self.directory.appendingPathComponent("missing.bin"), name: "f")
        })
        XCTAssertThrowsError(try serializer.multipartFormRequest(method: "POST", urlString: "http://example.com/", parameters: nil) {
            try $0.appendPart(withFileURL: try XCTUnwrap(URL(string: "http://example.com/remote.png")), name: "f")
        })
        XCTAssertThrowsError(try serializer.multipartFormRequest(method: "GET", urlString: "http://example.com/", parameters: ["a": 1],
                                                                 constructingBodyWith: nil))
        let empty = try serializer.multipartFormRequest(method: "POST", urlString: "http://example.com/", parameters: nil,
                                                        constructingBodyWith: nil)
        XCTAssertEqual(empty.value(forHTTPHeaderField: "Content-Type"), "application/x-www-form-urlencoded")
    }

    func testManagerMultipartPOSTAndItsFailure() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.responseSerializer = JSONResponseSerializer()
        let done = expectation(description: "uploaded")
        manager.POST("/upload", parameters: ["k": "v"], constructingBodyWith: { form in
            form.appendPart(withFormData: Data("x".utf8), name: "f")
        }, success: { _, object in
            XCTAssertNotNil((object as? [String: Int])?["bodyLength"])
            done.fulfill()
        }, failure: { _, error in XCTFail("\(error)"); done.fulfill() })
        let failed = expectation(description: "refused")
        let operation = manager.POST("/upload", parameters: nil, constructingBodyWith: { form in
            try form.appendPart(withFileURL: self.directory.appendingPathComponent("missing"), name: "f")
        }, success: nil, failure: { operation, _ in
            XCTAssertNil(operation)
            failed.fulfill()
        })
        XCTAssertNil(operation)
        wait(for: [done, failed], timeout: 10)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testAFileThatShrinksDuringTheUploadFailsCleanly() throws {
        let big = try file("big.bin", Data(repeating: 7, count: 4 << 20))
        let serializer = HTTPRequestSerializer()
        var request = try serializer.multipartFormRequest(method: "POST", urlString: server.url("/sink").absoluteString,
                                                          parameters: nil) { try $0.appendPart(withFileURL: big, name: "f") }
        request.timeoutInterval = 10
        try Data(repeating: 7, count: 1000).write(to: big)   // shrinks after the length was taken
        let (operation, outcome) = run(request)
        XCTAssertEqual(outcome.urlErrorCode, .requestBodyStreamExhausted, "\(String(describing: outcome.error))")
        XCTAssertTrue(eventually { operation.isFinished })
    }

    func testLargeFileStreamsWithBoundedMemory() throws {
        // ASan keeps freed memory in quarantine (256 MB by default), so RSS measures the sanitizer.
        try XCTSkipIf(Sanitizer.address, "RSS growth is not measurable under AddressSanitizer")
        let size = 256 << 20
        let path = directory.appendingPathComponent("large.bin").path
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: nil))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        let chunk = Data(repeating: 0x5A, count: 1 << 20)
        for _ in 0..<(size >> 20) { try handle.write(contentsOf: chunk) }
        try handle.close()
        let before = residentBytes()
        let request = try HTTPRequestSerializer().multipartFormRequest(
            method: "POST", urlString: server.url("/sink").absoluteString, parameters: nil) {
            try $0.appendPart(withFileURL: URL(fileURLWithPath: path), name: "f")
        }
        let operation = HTTPRequestOperation(request: request)
        operation.responseSerializer = JSONResponseSerializer()
        let peak = PeakSampler()
        peak.start()
        let outcome = run(operation, timeout: 120)
        peak.stop()
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        guard case .success(let object) = outcome else { return }
        XCTAssertGreaterThan((object.value as? [String: Int])?["bodyLength"] ?? 0, size)
        let growth = peak.peak - before
        print("multipart upload of \(size >> 20) MiB: RSS before \(before >> 10) KiB, peak \(peak.peak >> 10) KiB")
        XCTAssertLessThan(growth, 32 << 20, "RSS grew by \(growth >> 20) MiB")
    }

    func testThrottlingPacesTheUpload() throws {
        let serializer = HTTPRequestSerializer()
        let request = try serializer.multipartFormRequest(method: "POST", urlString: server.url("/upload").absoluteString,
                                                          parameters: nil) { form in
            form.appendPart(withFileData: Data(repeating: 1, count: 4000), name: "f", fileName: "f", mimeType: "application/octet-stream")
            form.throttleBandwidth(withPacketSize: 1000, delay: 0.05)
        }
        let started = Date()
        let (_, outcome) = run(request)
        XCTAssertTrue(outcome.isSuccess)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.15, "at least three pauses between five packets")
        let body = try XCTUnwrap(server.requests.first?.body)
        XCTAssertEqual(server.requests.first?.header("Content-Length"), String(body.count))
    }

    func testWritingTheBodyToAFile() throws {
        let serializer = HTTPRequestSerializer()
        let request = try serializer.multipartFormRequest(method: "POST", urlString: "http://example.com/", parameters: ["a": "1"],
                                                          constructingBodyWith: nil)
        let target = directory.appendingPathComponent("body.multipart")
        let written = expectation(description: "written")
        let detached = serializer.request(withMultipartFormRequest: request, writingStreamContentsTo: target) { error in
            XCTAssertNil(error)
            written.fulfill()
        }
        XCTAssertNil(detached.httpBodyStream)
        XCTAssertNotNil(detached.value(forHTTPHeaderField: "Content-Length"))
        wait(for: [written], timeout: 5)
        let body = try Data(contentsOf: target)
        XCTAssertEqual(String(body.count), detached.value(forHTTPHeaderField: "Content-Length"))
    }
}

/// The process's resident set size, from /proc/self/statm.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * 4096 : 0
}

/// Samples the RSS every 10 ms on a timer until stopped, keeping the peak; guarded by `lock`.
final class PeakSampler: @unchecked Sendable {
    private let lock = NSLock()
    private var highest = 0                          // guarded by lock
    private var timer: DispatchSourceTimer?          // guarded by lock

    var peak: Int { lock.withLock { highest } }

    func start() {
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "test.rss"))
        source.schedule(deadline: .now(), repeating: .milliseconds(10))
        source.setEventHandler { [self] in
            let current = residentBytes()
            lock.withLock { highest = max(highest, current) }
        }
        lock.withLock { timer = source }
        source.resume()
    }

    func stop() {
        lock.withLock { timer }?.cancel()
        let current = residentBytes()
        lock.withLock { highest = max(highest, current) }
    }
}
