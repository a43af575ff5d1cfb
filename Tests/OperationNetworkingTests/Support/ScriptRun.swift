import Foundation
import XCTest

/// Runs a copy of the repository's `scripts/test` for the tests of the script itself.
enum ScriptRun {
    /// Runs `script` with `arguments` in `environment`: its exit status and its standard output and
    /// error together. A run that does not end in 120 s is stopped and fails the test.
    static func run(_ script: URL, _ arguments: [String], environment: [String: String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = script
        process.arguments = arguments
        process.environment = environment
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("onet-script-out-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        process.standardOutput = handle
        process.standardError = handle
        let finished = XCTestExpectation(description: "\(script.lastPathComponent) finished")
        process.terminationHandler = { _ in finished.fulfill() }
        try process.run()
        if XCTWaiter.wait(for: [finished], timeout: 120) != .completed {
            process.terminate()
            process.waitUntilExit()
            XCTFail("\(script.path) did not finish in 120 s")
        }
        return (process.terminationStatus, try String(contentsOf: output, encoding: .utf8))
    }
}
