import Foundation
import XCTest

/// AFNetworking 2.x code ported as written compiles in the Swift 6 language mode with warnings, not
/// errors: `Fixtures/Swift6Port` is such a client (blocks capturing `self`, a `var` and a callback type
/// that is not `@Sendable`; overrides spelling AFN's block types), built with `swift build` against
/// this package by path.
final class Swift6PortTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A first build compiles the library (under a minute here); later ones reuse the scratch path and
    /// recompile only what changed.
    private static let buildTimeout: TimeInterval = 600

    func testPortedAFNCodeCompilesWithWarningsOnly() throws {
        let scratch = root.appendingPathComponent(".build/swift6-port")
        let package = scratch.appendingPathComponent("package")
        try copyFixture(to: package)
        let log = scratch.appendingPathComponent("build.log")
        let status = try build(package: package, scratch: scratch.appendingPathComponent("build"), log: log)
        let output = try String(contentsOf: log, encoding: .utf8)
        let diagnostics = output.components(separatedBy: "\n").filter { $0.contains("PortedClient.swift:") }

        XCTAssertEqual(status, 0, "the ported client did not build:\n\(output.suffix(4000))")
        XCTAssertEqual(diagnostics.filter { $0.contains(" error: ") }, [])
        for warning in ["capture of 'self' with non-Sendable type 'FeedViewModel' in a '@Sendable' closure",
                        "mutation of captured var 'attempts' in concurrently-executing code",
                        "capture of 'completion' with non-Sendable type 'LoadCompletion'",
                        "passing non-Sendable parameter 'success' to function expecting a '@Sendable' closure"] {
            XCTAssertTrue(diagnostics.contains { $0.contains(" warning: \(warning)") }, "no warning: \(warning)\n\(output.suffix(4000))")
        }
    }

    /// Writes the fixture into `destination` (fresh modification times, so the client is compiled —
    /// and its warnings printed — on every run), with this package's resolved versions.
    private func copyFixture(to destination: URL) throws {
        let source = root.appendingPathComponent("Tests/OperationNetworkingTests/Fixtures/Swift6Port")
        let files = ["Package.swift", "Sources/PortedClient/PortedClient.swift"]
        for file in files {
            let target = destination.appendingPathComponent(file)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contentsOf: source.appendingPathComponent(file)).write(to: target)
        }
        // The same versions as this package, resolved from the local cache rather than looked up again.
        let resolved = root.appendingPathComponent("Package.resolved")
        if let pins = try? Data(contentsOf: resolved) {
            try pins.write(to: destination.appendingPathComponent("Package.resolved"))
        }
    }

    /// Runs `swift build` for `package`; its status. Skips when the toolchain cannot finish in time.
    private func build(package: URL, scratch: URL, log: URL) throws -> Int32 {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "build", "--package-path", package.path, "--scratch-path", scratch.path]
        var environment = ProcessInfo.processInfo.environment
        environment["OPERATIONNETWORKING_ROOT"] = root.path
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        let finished = XCTestExpectation(description: "swift build finished")
        process.terminationHandler = { _ in finished.fulfill() }
        try process.run()
        if XCTWaiter.wait(for: [finished], timeout: Swift6PortTests.buildTimeout) != .completed {
            process.terminate()
            process.waitUntilExit()
            throw XCTSkip("a nested swift build did not finish in \(Int(Swift6PortTests.buildTimeout)) s here")
        }
        if process.terminationStatus == 127 { throw XCTSkip("no swift executable on PATH") }
        return process.terminationStatus
    }
}
