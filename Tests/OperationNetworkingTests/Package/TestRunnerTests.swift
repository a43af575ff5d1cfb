import Foundation
import XCTest

/// `scripts/test` without arguments runs each test class in a process of its own, several at a time:
/// run here in a stand-in repository whose test bundle is a shell script playing classes that pass,
/// fail, crash, hang past the time limit, skip, fail after their tests (a leak report at exit) and
/// wait for each other, and whose `swift` builds nothing and plays Swift Testing.
final class TestRunnerTests: LibraryTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Each class's outcome, counted: a crash and a hang fail every test they left unfinished, a
    /// process that fails after its tests is one failure; two classes ran at the same time, and the
    /// class that runs alone after the others did.
    func testEveryTestCountsAndAProcessThatDiesOrHangsFailsWhatItLeftUnfinished() throws {
        let repository = try StandInRepository(root: root, bundleDirectory: ".build/debug")
        defer { repository.remove() }
        let (status, output) = try repository.runTests([])

        XCTAssertNotEqual(status, 0, shown(output))
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.dropLast().last, "6 passed, 5 failed, 1 skipped", shown(output))
        XCTAssertTrue(output.contains("Test Case 'BTests.testCrash' did not finish: the test process died of signal 11"),
                      shown(output))
        XCTAssertTrue(output.contains("Test Case 'BTests.testNeverRun' did not finish: the test process died of signal 11"),
                      shown(output))
        XCTAssertTrue(output.contains("Test Case 'CTests.testHang' did not finish: the test process was stopped after 3 s"),
                      shown(output))
        XCTAssertTrue(output.contains("OperationNetworkingTests.GTests failed after its tests finished: the test process exited with status 23"),
                      shown(output))
        XCTAssertFalse(output.contains("waited alone"), "ETests and FTests ran side by side: \(shown(output))")
        let build = try repository.swiftCommands().first { $0.hasPrefix("swift build ") }
        XCTAssertEqual(build, "swift build --build-tests")
    }

    /// Under a sanitizer the tests that run once are not run; all passing, the status is 0.
    func testASanitizerPassLeavesOutTheTestsThatRunOnce() throws {
        let repository = try StandInRepository(root: root, bundleDirectory: ".build-tsan/debug", listing: [
            "OperationNetworkingTests.ETests/testWaitsForF", "OperationNetworkingTests.FTests/testWaitsForE",
            "OperationNetworkingTests.Swift6PortTests/testBuilds",
        ])
        defer { repository.remove() }
        let (status, output) = try repository.runTests(["--sanitize=thread"])

        XCTAssertEqual(status, 0, shown(output))
        XCTAssertEqual(output.split(separator: "\n").last.map(String.init), "3 passed, 0 failed, 0 skipped", shown(output))
        XCTAssertFalse(output.contains("Swift6PortTests"), shown(output))
        let commands = try repository.swiftCommands()
        XCTAssertTrue(commands.contains("swift build --build-tests --sanitize=thread --scratch-path .build-tsan"), "\(commands)")
        XCTAssertTrue(commands.contains { $0.hasPrefix("swift test --skip-build --disable-xctest --sanitize=thread") }, "\(commands)")
    }

    /// `output` for a failure message, its test result lines lower-cased so that they never count in
    /// the summary of the run this test is part of.
    private func shown(_ output: String) -> String {
        output.replacingOccurrences(of: "Test ", with: "test ")
    }
}

/// A directory with `scripts/test`, a `scripts/setup` that installs nothing, a stand-in test bundle
/// and a stand-in `swift` (first on `PATH`) that records its arguments.
private struct StandInRepository {
    let directory: URL

    /// The classes the bundle plays: A passes one test and fails one, B crashes in its first, C hangs,
    /// D skips, E and F each wait for the other to start (a class that waits alone fails), G passes
    /// and then exits 23 as LeakSanitizer does after a report; HTTP2MultiplexingTests, which runs after
    /// all others, fails unless E and F have ended.
    static let allTests = [
        "OperationNetworkingTests.ATests/testPass", "OperationNetworkingTests.ATests/testFail",
        "OperationNetworkingTests.BTests/testCrash", "OperationNetworkingTests.BTests/testNeverRun",
        "OperationNetworkingTests.CTests/testHang", "OperationNetworkingTests.DTests/testSkip",
        "OperationNetworkingTests.ETests/testWaitsForF", "OperationNetworkingTests.FTests/testWaitsForE",
        "OperationNetworkingTests.GTests/testPassThenLeak", "OperationNetworkingTests.HTTP2MultiplexingTests/testAlone",
    ]

    init(root: URL, bundleDirectory: String, listing: [String] = StandInRepository.allTests) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-runner-\(UUID().uuidString)")
        let scripts = directory.appendingPathComponent("scripts")
        try FileManager.default.createDirectory(at: scripts, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: root.appendingPathComponent("scripts/test"), to: scripts.appendingPathComponent("test"))
        try write("#!/bin/sh\nexit 0\n", to: "scripts/setup")
        try write("#!/bin/sh\necho \"swift $*\" >>\"\(directory.path)/swift-commands\"\n"
                  + "case \"$1\" in test) echo '✔ Test first() passed after 0.001 seconds.' ;; esac\n", to: "bin/swift")
        let started = directory.appendingPathComponent("started").path
        try write("""
            #!/bin/sh
            if [ "$1" = "--list-tests" ]; then
              echo "Listing \(listing.count) tests in stand-in.xctest:"
              echo
              echo "\(listing.joined(separator: "\n"))"
              exit 0
            fi
            run() { echo "Test Case '$1' started at 2026-11-29 00:00:00.000"; }
            ended() { echo "Test Case '$1' $2 (0.001 seconds)"; }
            awaits() {
              run "$1"; mkdir -p "\(started)"; touch "\(started)/$2"
              for i in $(seq 1 20); do [ -e "\(started)/$3" ] && { ended "$1" passed; touch "\(started)/$2-ended"; exit 0; }; sleep 0.1; done
              echo "$1 waited alone"; ended "$1" failed; exit 1
            }
            case "$1" in
              *ATests*) run ATests.testPass; ended ATests.testPass passed; run ATests.testFail; ended ATests.testFail failed; exit 1 ;;
              *BTests*) run BTests.testCrash; kill -SEGV $$ ;;
              *CTests*) run CTests.testHang; exec sleep 60 ;;
              *DTests*) run DTests.testSkip; ended DTests.testSkip skipped ;;
              *ETests*) awaits ETests.testWaitsForF E F ;;
              *FTests*) awaits FTests.testWaitsForE F E ;;
              *GTests*) run GTests.testPassThenLeak; ended GTests.testPassThenLeak passed; exit 23 ;;
              *HTTP2MultiplexingTests*) run HTTP2MultiplexingTests.testAlone
                [ -e "\(started)/E-ended" ] && [ -e "\(started)/F-ended" ] && ended HTTP2MultiplexingTests.testAlone passed && exit 0
                echo "HTTP2MultiplexingTests ran beside others"; ended HTTP2MultiplexingTests.testAlone failed; exit 1 ;;
              *) echo "ran $1"; exit 2 ;;
            esac
            """, to: "\(bundleDirectory)/OperationNetworkingPackageTests.xctest")
    }

    /// Writes an executable file at `path` in the directory.
    private func write(_ text: String, to path: String) throws {
        let file = directory.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: file.path)
    }

    /// Runs the copy of `scripts/test` with `arguments`, three classes at a time, a class stopped
    /// after 3 s; its status and its standard output and error together.
    func runTests(_ arguments: [String]) throws -> (Int32, String) {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = directory.appendingPathComponent("bin").path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["ONET_TEST_WORKERS"] = "3"
        environment["ONET_TEST_CLASS_TIMEOUT"] = "3"
        return try ScriptRun.run(directory.appendingPathComponent("scripts/test"), arguments, environment: environment)
    }

    /// The command lines the stand-in `swift` was run with, in order.
    func swiftCommands() throws -> [String] {
        let text = try String(contentsOf: directory.appendingPathComponent("swift-commands"), encoding: .utf8)
        return text.split(separator: "\n").map(String.init)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }
}
