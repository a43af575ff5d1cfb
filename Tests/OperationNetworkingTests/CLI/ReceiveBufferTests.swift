import Foundation
@testable import OperationNetworking
import XCTest

/// libcurl reads a response into a buffer of `Transfer.receiveBufferSize` rather than its 16 KiB
/// default, so a large body costs far fewer `recvfrom` calls. Counted from outside by strace(1)
/// around `onet request`: the library's process, its network thread and its real socket.
final class ReceiveBufferTests: ServerTestCase {
    func testALargeBodyTakesFewerReadsThanLibcurlsDefaultBufferAllows() throws {
        guard let strace = ["/usr/bin/strace", "/bin/strace"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw XCTSkip("strace(1) is not installed (scripts/setup installs it)")
        }
        let size = 8 << 20
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-recv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = directory.appendingPathComponent("body")
        let counts = directory.appendingPathComponent("counts")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: strace)
        process.arguments = ["-f", "-qq", "-c", "-e", "trace=recvfrom", "-o", counts.path,
                             try onetExecutable().path, "request", "--ignore-stdin", "--output", body.path,
                             server.url("/bytes/\(size)").absoluteString]
        process.environment = onetEnvironment()
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let exited = expectation(description: "strace onet request exits")
        process.terminationHandler = { _ in exited.fulfill() }
        try process.run()
        wait(for: [exited], timeout: 120)

        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(try Data(contentsOf: body), deterministicBytes(size))
        let calls = try recvfromCalls(in: String(decoding: Data(contentsOf: counts), as: UTF8.self))
        // A 16 KiB buffer needs at least 512 reads for 8 MiB; the library's takes a fraction of that.
        XCTAssertLessThan(calls, size / 16_384, "\(calls) recvfrom calls: the body was read 16 KiB at a time")
        XCTAssertGreaterThanOrEqual(calls, size / Transfer.receiveBufferSize)
    }

    /// The `calls` column of strace's summary line for `recvfrom`.
    private func recvfromCalls(in summary: String) throws -> Int {
        let line = summary.split(separator: "\n").first { $0.split(separator: " ").last == "recvfrom" }
        // "% time, seconds, usecs/call, calls, [errors,] syscall"
        let fields = try XCTUnwrap(line, "no recvfrom line in:\n\(summary)").split(separator: " ")
        return try XCTUnwrap(fields.count >= 5 ? Int(fields[3]) : nil, "unreadable line: \(line ?? "")")
    }
}
