import Foundation
import XCTest

extension XCTestCase {
    /// Runs this test bundle again, in a process of its own, with only `test` ("Class/testMethod") and
    /// `environment` over this process's; a child half skips itself in any other run, so the environment
    /// is what tells it to run. Fails the calling test unless the child exited 0 within two minutes
    /// having passed `test` (a skip is not a pass). Returns what the child printed. `launcher`, when
    /// given, is a command (and its arguments) the bundle runs under, such as `setpriv`.
    @discardableResult
    func runChildHalf(_ test: String, environment: [String: String], launcher: [String] = []) throws -> String {
        let (child, text) = try runChild(test, environment: environment, launcher: launcher)
        XCTAssertEqual(child.terminationStatus, 0, text)
        let method = test.split(separator: "/").last.map(String.init) ?? test
        XCTAssertTrue(text.contains("\(method)' passed"), "the child half did not pass: \(text)")
        return text
    }

    /// Runs `test` in a child process as `runChildHalf` does and returns the ended process and what it
    /// printed, however it ended (for a child that must stop on an assertion).
    func runChild(_ test: String, environment: [String: String], launcher: [String] = []) throws -> (Process, String) {
        let command = launcher + [try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
                                  "OperationNetworkingTests.\(test)"]
        let child = Process()
        child.executableURL = URL(fileURLWithPath: command[0])
        child.arguments = Array(command.dropFirst())
        child.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        let exited = expectation(description: "\(test) exited")
        child.terminationHandler = { _ in exited.fulfill() }
        let printed = PipeReader(output.fileHandleForReading)
        try child.run()
        wait(for: [exited], timeout: 120)
        return (child, printed.wait())
    }
}
