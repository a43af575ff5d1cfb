import Foundation
import XCTest

/// What one run of the `onet` executable produced.
struct OnetRun: CustomStringConvertible {
    /// The exit status.
    var status: Int32
    /// Standard output, byte for byte.
    var stdout: Data
    /// Standard error as text.
    var stderr: String
    /// Standard output as text.
    var text: String { String(decoding: stdout, as: UTF8.self) }
    /// Everything, for assertion messages.
    var description: String { "status \(status)\n--- stdout\n\(text)\n--- stderr\n\(stderr)" }
}

/// The environment for an `onet` child process: this one's, with LeakSanitizer's exit-time check
/// off. Under `scripts/test --sanitize=address` the child is an ASan build too; a tool that exits
/// while libdispatch still holds blocks in flight gets reports for what only those blocks reference
/// (LeakSanitizer cannot see them), which would turn its exit status into 1. AddressSanitizer's
/// memory errors still fail the child, and the library's own leaks are checked in the test process.
/// Each child's cache directory (`XDG_CACHE_HOME`, where its `URLCache.shared` lives) is a new one
/// inside this process's (see `TestURLCache`): never the user's, and no child's stored responses
/// answer another's requests.
func onetEnvironment() -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    let options = environment["LSAN_OPTIONS"].map { $0 + ":" } ?? ""
    environment["LSAN_OPTIONS"] = options + "detect_leaks=0"
    environment["XDG_CACHE_HOME"] = TestURLCache.directory.appendingPathComponent("child-\(UUID().uuidString)").path
    return environment
}

extension XCTestCase {
    /// Starts `onet` with `arguments` in `onetEnvironment()`, standard output to `output` (and standard
    /// error to `errors` when given), standard input empty; the expectation is fulfilled when it exits.
    func launchOnet(_ arguments: [String], output: Any, errors: Any? = nil) throws -> (Process, XCTestExpectation) {
        let process = Process()
        process.executableURL = try onetExecutable()
        process.arguments = arguments
        process.environment = onetEnvironment()
        process.standardOutput = output
        if let errors { process.standardError = errors }
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        let exited = expectation(description: "onet \(arguments.first ?? "") exits")
        process.terminationHandler = { _ in exited.fulfill() }
        try process.run()
        return (process, exited)
    }

    /// Runs `onet` with `arguments`, standard output and error on separate pipes (read concurrently,
    /// so neither can fill up and stall the child), standard input empty.
    func runOnetCapturing(_ arguments: [String], timeout: TimeInterval = 60) throws -> OnetRun {
        let output = Pipe()
        let errors = Pipe()
        let (process, finished) = try launchOnet(arguments, output: output, errors: errors)
        let errorText = PipeReader(errors.fileHandleForReading)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        wait(for: [finished], timeout: timeout)
        return OnetRun(status: process.terminationStatus, stdout: data, stderr: errorText.wait())
    }

    /// Runs `onet` with `arguments`, standard output to `file` (a file or device the test opened),
    /// standard error captured.
    func runOnet(_ arguments: [String], standardOutput file: FileHandle, timeout: TimeInterval = 60) throws -> OnetRun {
        let errors = Pipe()
        let (process, finished) = try launchOnet(arguments, output: file, errors: errors)
        let errorText = PipeReader(errors.fileHandleForReading)
        wait(for: [finished], timeout: timeout)
        return OnetRun(status: process.terminationStatus, stdout: Data(), stderr: errorText.wait())
    }

    /// Runs `onet` with `arguments` in a pseudo-terminal (util-linux `script`), so that it sees a
    /// terminal on its standard output; returns the exit status and what the terminal showed.
    func runOnetInTerminal(_ arguments: [String], timeout: TimeInterval = 60) throws -> (Int32, String) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            throw XCTSkip("script(1) from util-linux is not installed")
        }
        let command = ([try onetExecutable().path] + arguments).map(OnetProcessQuoting.shellQuoted).joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["--quiet", "--return", "--command", command, "/dev/null"]
        process.environment = onetEnvironment()
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        let finished = expectation(description: "script exits")
        process.terminationHandler = { _ in finished.fulfill() }
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        wait(for: [finished], timeout: timeout)
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// Shell quoting for the command line `script` runs.
enum OnetProcessQuoting {
    /// `text` in single quotes, each `'` written as `'\''`.
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Reads a pipe to its end on another thread; `wait()` returns what it read.
/// Guarded by `lock`, hence `@unchecked Sendable`.
final class PipeReader: @unchecked Sendable {
    private let lock = NSLock()
    private var text = ""   // guarded by lock
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let data = handle.readDataToEndOfFile()
            lock.withLock { text = String(decoding: data, as: UTF8.self) }
            done.signal()
        }
    }

    /// What the pipe delivered up to its end (waits at most 60 s for it).
    func wait() -> String {
        _ = done.wait(timeout: .now() + 60)
        return lock.withLock { text }
    }
}

extension XCTestCase {
    /// Runs `onet` with `input` on its standard input (then closed), `environment` over
    /// `onetEnvironment()`, in `directory` when given; standard output and error captured.
    func runOnet(_ arguments: [String], input: Data, environment: [String: String] = [:], directory: URL? = nil,
                 timeout: TimeInterval = 60) throws -> OnetRun {
        let process = Process()
        process.executableURL = try onetExecutable()
        process.arguments = arguments
        process.environment = onetEnvironment().merging(environment) { $1 }
        if let directory { process.currentDirectoryURL = directory }
        let (feed, output, errors) = (Pipe(), Pipe(), Pipe())
        process.standardInput = feed
        process.standardOutput = output
        process.standardError = errors
        let exited = expectation(description: "onet exits")
        process.terminationHandler = { _ in exited.fulfill() }
        try process.run()
        let errorText = PipeReader(errors.fileHandleForReading)
        try feed.fileHandleForWriting.write(contentsOf: input)
        try feed.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        wait(for: [exited], timeout: timeout)
        return OnetRun(status: process.terminationStatus, stdout: data, stderr: errorText.wait())
    }
}

extension XCTestCase {
    /// Starts `onet fetch` of `url` into `target`, sends SIGINT (no terminal) once `file` has bytes,
    /// and checks that it exited 130 (paused and saved).
    func interruptFetch(of url: URL, into target: URL, file: URL) throws {
        let (process, exited) = try launchOnet(["fetch", "--to", target.path, url.absoluteString], output: FileHandle.nullDevice,
                                               errors: FileHandle.nullDevice)
        XCTAssertTrue(eventually(timeout: 20) {
            ((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.intValue ?? 0) > 0
        }, "no bytes arrived")
        process.interrupt()
        wait(for: [exited], timeout: 30)
        XCTAssertEqual(process.terminationStatus, 130)
    }
}
