import Foundation
import XCTest

/// `scripts/test` closes with "N passed, N failed, N skipped" over XCTest and Swift Testing, and
/// exits with `swift test`'s status: its counting runs on logs in both formats, and the whole
/// script runs against a stand-in `swift` that prints a log and fails.
final class TestSummaryTests: LibraryTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// XCTest as corelibs prints it (summary lines included, which must not count twice), then Swift
    /// Testing with its symbols, one line in colour, an issue line and its run summary.
    private let mixedLog = """
        Test Suite 'All tests' started at 2026-11-28 19:19:31.212
        Test Case 'ATests.testOne' started at 2026-11-28 19:19:31.231
        Test Case 'ATests.testOne' passed (0.304 seconds)
        Test Case 'ATests.testTwo' started at 2026-11-28 19:19:31.535
        /x/ATests.swift:12: error: ATests.testTwo : XCTAssertEqual failed: ("1") is not equal to ("2")
        Test Case 'ATests.testTwo' failed (0.105 seconds)
        Test Case 'ATests.testThree' started at 2026-11-28 19:19:31.640
        /x/ATests.swift:20: ATests.testThree : Test skipped - no curl here
        Test Case 'ATests.testThree' skipped (0.014 seconds)
        Test Case 'BTests.testFour' started at 2026-11-28 19:19:31.654
        printed by a test: Test Case 'Fake.test' passed after nothing
        Test Case 'BTests.testFour' passed (0.136 seconds)
        Test Suite 'ATests' failed at 2026-11-28 19:19:31.790
        \t Executed 4 tests, with 1 test skipped and 1 failure (0 unexpected) in 0.559 (0.559) seconds
        Test Suite 'All tests' failed at 2026-11-28 19:19:31.790
        \t Executed 4 tests, with 1 test skipped and 1 failure (0 unexpected) in 0.559 (0.559) seconds
        ◇ Test run started.
        ↳ Testing Library Version: 6.3.1
        ◇ Test first() started.
        ✔ Test first() passed after 0.001 seconds.
        \u{1B}[1;32m✔\u{1B}[0m Test second() passed after 0.001 seconds.
        ✘ Test third() recorded an issue at T.swift:3:5: Expectation failed: 1 == 2
        ✘ Test third() failed after 0.002 seconds with 1 issue.
        ➜ Test fourth() skipped: "not on Linux"
        ✔ Suite S passed after 0.004 seconds.
        ✘ Test run with 4 tests in 1 suite failed after 0.004 seconds with 1 issue.

        """

    func testCountsXCTestCasesAndSwiftTestingTestsOnce() throws {
        XCTAssertEqual(try summary(of: mixedLog), "4 passed, 2 failed, 2 skipped")
    }

    /// The closing "Test run with 0 tests" of an XCTest-only suite adds nothing.
    func testAnEmptySwiftTestingRunAddsNothing() throws {
        let log = """
            Test Case 'ATests.testOne' started at 2026-11-28 19:19:31.231
            Test Case 'ATests.testOne' passed (0.304 seconds)
            \t Executed 1 test, with 0 failures (0 unexpected) in 0.304 (0.304) seconds
            ◇ Test run started.
            ✔ Test run with 0 tests passed after 0.001 seconds.

            """
        XCTAssertEqual(try summary(of: log), "1 passed, 0 failed, 0 skipped")
    }

    /// A case that started and never finished (the process died in it) is a failure, not nothing.
    func testACaseThatNeverFinishedCountsAsFailed() throws {
        let log = """
            Test Case 'ATests.testOne' started at 2026-11-28 19:19:31.231
            Test Case 'ATests.testOne' passed (0.304 seconds)
            Test Case 'ATests.testCrash' started at 2026-11-28 19:19:31.535
            Fatal error: Unexpectedly found nil while unwrapping an Optional value

            """
        XCTAssertEqual(try summary(of: log), "1 passed, 1 failed, 0 skipped")
    }

    /// The whole script: swift test's output passes through, the line comes last, alone, and the exit
    /// status is swift test's; the mode's options and the caller's arguments reach swift test.
    func testTheScriptEndsWithTheLineAndKeepsSwiftTestsStatus() throws {
        let stand = FileManager.default.temporaryDirectory.appendingPathComponent("onet-fake-swift-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: stand) }
        try FileManager.default.createDirectory(at: stand, withIntermediateDirectories: true)
        let logFile = stand.appendingPathComponent("log.txt")
        try Data(mixedLog.utf8).write(to: logFile)
        let fake = stand.appendingPathComponent("swift")
        try Data("#!/bin/sh\necho \"swift $*\" >&2\ncat \"\(logFile.path)\"\nexit 3\n".utf8).write(to: fake)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = stand.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")

        let (status, output) = try runScript(["--sanitize=thread", "--filter", "PinningTests"], environment: environment)
        XCTAssertEqual(status, 3, shown(output))
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.dropLast().last, "4 passed, 2 failed, 2 skipped", shown(output))
        let command = try XCTUnwrap(lines.first { $0.hasPrefix("swift test ") }, shown(output))
        XCTAssertTrue(command.hasPrefix("swift test --sanitize=thread --scratch-path .build-tsan --skip "), command)
        XCTAssertTrue(command.hasSuffix(" --filter PinningTests"), command)
        XCTAssertTrue(command.contains("Swift6PortTests"), "the sanitizer pass leaves out the tests that run once: \(command)")
        XCTAssertTrue(output.contains("Test Case 'ATests.testTwo' failed (0.105 seconds)"), "swift test's own output passes through")
    }

    /// `output` for a failure message, its test result lines lower-cased so that they never count in
    /// the summary of the run this test is part of.
    private func shown(_ output: String) -> String {
        output.replacingOccurrences(of: "Test ", with: "test ")
    }

    /// `scripts/test --summarize FILE` for `log`.
    private func summary(of log: String) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("onet-test-log-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(log.utf8).write(to: file)
        let (status, output) = try runScript(["--summarize", file.path], environment: ProcessInfo.processInfo.environment)
        XCTAssertEqual(status, 0, shown(output))
        return output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `scripts/test` with `arguments`; its status and its standard output and error together.
    private func runScript(_ arguments: [String], environment: [String: String]) throws -> (Int32, String) {
        try ScriptRun.run(root.appendingPathComponent("scripts/test"), arguments, environment: environment)
    }
}
