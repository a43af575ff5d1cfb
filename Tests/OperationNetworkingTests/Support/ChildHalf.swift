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
        let text = printed.wait()
        XCTAssertEqual(child.terminationStatus, 0, text)
        let method = test.split(separator: "/").last.map(String.init) ?? test
        XCTAssertTrue(text.contains("\(method)' passed"), "the child half did not pass: \(text)")
        return text
    }
}
