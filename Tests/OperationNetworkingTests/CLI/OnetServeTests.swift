import Foundation
import OperationNetworkingTestServer
import XCTest

/// `onet serve`: the embedded server answers `onet request` and stops cleanly on SIGTERM.
final class OnetServeTests: LibraryTestCase {
    func testServeAnswersRequestsAndStopsOnTerminate() throws {
        let output = Pipe()
        let (process, exited) = try launchOnet(["serve", "--seconds", "60"], output: output)
        var text = ""
        while !text.contains("\n") {   // blocks until the first line arrives (or the pipe closes)
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let base = try XCTUnwrap(text.split(separator: "\n").first.flatMap { $0.split(separator: " ").last }.map(String.init),
                                 text)
        XCTAssertTrue(base.hasPrefix("http://127.0.0.1:"), text)
        let run = try runOnetCapturing(["request", "-I", base + "/echo", "q==served"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertTrue(run.text.contains("\"q\":\"served\""), run.text)
        process.terminate()
        wait(for: [exited], timeout: 10)
        XCTAssertEqual(process.terminationStatus, 0)
        let rest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(rest.contains("Served 1 request(s)."), rest)
    }
}
