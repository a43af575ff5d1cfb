import Foundation
import XCTest

/// One nested `swift build` of `Fixtures/Swift6Port`, made once per test process and shared by the
/// tests that read it: the ported client, plus the code the documentation says compiles —
/// Migration.md's blocks marked `<!-- Swift6PortTests compiles this block -->` added to the
/// `PortedClient` target, and the Getting started article's Swift snippets, in order, as the
/// `GettingStarted` target's `main.swift` — built against this package by path in the Swift 6
/// language mode. A build that cannot start or does not finish in time is a failure, never a skip.
struct Swift6PortBuild: Sendable {
    /// The repository's root.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A first build compiles the library (about a minute here); later ones reuse the scratch path
    /// and recompile only what changed.
    static let timeout: TimeInterval = 600

    /// The line before each Migration.md block the build compiles.
    static let compiledMarker = "<!-- Swift6PortTests compiles this block -->"

    /// The build every test reads, made on first use.
    static let shared = Swift6PortBuild.make()

    /// `swift build`'s exit status; `nil` when it did not run to its end.
    let status: Int32?
    /// Everything the build printed, or why it could not run.
    let output: String
    /// Migration.md's compiled blocks as they were written into the package.
    let migrationSnippets: String
    /// The Getting started article's Swift blocks, the package manifest first.
    let gettingStartedBlocks: [String]

    /// The error and warning lines about `file` (a path ending, such as `GettingStarted/main.swift`).
    func diagnostics(in file: String) -> [String] {
        output.components(separatedBy: "\n").filter {
            $0.contains("/\(file):") && ($0.contains(" error: ") || $0.contains(" warning: "))
        }
    }

    /// Fails the calling test unless the build ran to its end with status 0.
    func assertSucceeded(file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(status, 0, "the nested build failed:\n\(output.suffix(6000))", file: file, line: line)
    }

    private static func make() -> Swift6PortBuild {
        let scratch = root.appendingPathComponent(".build/swift6-port")
        let package = scratch.appendingPathComponent("package")
        do {
            let migration = compiledBlocks(in: try text("Migration.md")).joined(separator: "\n")
            let article = swiftBlocks(in: try text("Sources/OperationNetworking/OperationNetworking.docc/GettingStarted.md"))
            try copyFixture(to: package)
            let snippets = "import Foundation\nimport OperationNetworking\n\n" + migration
            try Data(snippets.utf8).write(to: package.appendingPathComponent("Sources/PortedClient/MigrationSnippets.swift"))
            let main = "// GettingStarted.md's Swift snippets after its manifest, in order.\n"
                + article.dropFirst().joined(separator: "\n")
            try Data(main.utf8).write(to: package.appendingPathComponent("Sources/GettingStarted/main.swift"))
            let log = scratch.appendingPathComponent("build.log")
            let status = try build(package: package, scratch: scratch.appendingPathComponent("build"), log: log)
            let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            let ran = status == nil ? "swift build did not finish in \(Int(timeout)) s\n" : ""
            return Swift6PortBuild(status: status, output: ran + output, migrationSnippets: migration,
                                   gettingStartedBlocks: article)
        } catch {
            return Swift6PortBuild(status: nil, output: "the nested build could not run: \(error)",
                                   migrationSnippets: "", gettingStartedBlocks: [])
        }
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The Swift code blocks of `markdown` whose opening fence follows `compiledMarker`, each without
    /// the indentation its fence has (a block inside a list item is indented).
    static func compiledBlocks(in markdown: String) -> [String] {
        let lines = markdown.components(separatedBy: "\n")
        return lines.indices.dropLast().filter {
            lines[$0].trimmingCharacters(in: .whitespaces) == compiledMarker
        }.map { block(startingAt: $0 + 1, in: lines) }
    }

    /// Every ```swift block of `markdown`, in order.
    static func swiftBlocks(in markdown: String) -> [String] {
        let lines = markdown.components(separatedBy: "\n")
        return lines.indices.filter { lines[$0].trimmingCharacters(in: .whitespaces) == "```swift" }
            .map { block(startingAt: $0, in: lines) }
    }

    /// The code of the block whose opening fence is `lines[fence]`, up to its closing fence.
    private static func block(startingAt fence: Int, in lines: [String]) -> String {
        let indent = String(lines[fence].prefix { $0 == " " })
        var code: [String] = []
        for line in lines[(fence + 1)...] {
            if line.trimmingCharacters(in: .whitespaces) == "```" { break }
            code.append(line.hasPrefix(indent) ? String(line.dropFirst(indent.count)) : line)
        }
        return code.joined(separator: "\n") + "\n"
    }

    /// Writes the fixture into `destination` afresh (new modification times, so the fixture's files
    /// are compiled — and their warnings printed — on every run), with this package's resolved versions.
    private static func copyFixture(to destination: URL) throws {
        let source = root.appendingPathComponent("Tests/OperationNetworkingTests/Fixtures/Swift6Port")
        try? FileManager.default.removeItem(at: destination.appendingPathComponent("Sources"))
        let enumerator = FileManager.default.enumerator(at: source, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            let relative = String(url.path.dropFirst(source.path.count + 1))
            let target = destination.appendingPathComponent(relative)
            try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(contentsOf: url).write(to: target)
        }
        // The same versions as this package, resolved from the local cache rather than looked up again.
        if let pins = try? Data(contentsOf: root.appendingPathComponent("Package.resolved")) {
            try pins.write(to: destination.appendingPathComponent("Package.resolved"))
        }
    }

    /// Runs `swift build` for `package` into `log`; its status, or `nil` when it did not finish in time
    /// (it is then stopped).
    private static func build(package: URL, scratch: URL, log: URL) throws -> Int32? {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Only the build's diagnostics and status are read, never its products: no debug information
        // and no index, which would be much of its work.
        process.arguments = ["swift", "build", "--package-path", package.path, "--scratch-path", scratch.path,
                             "--disable-index-store", "-Xswiftc", "-gnone"]
        var environment = ProcessInfo.processInfo.environment
        environment["OPERATIONNETWORKING_ROOT"] = root.path
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        let finished = XCTestExpectation(description: "swift build finished")
        process.terminationHandler = { _ in finished.fulfill() }
        try process.run()
        guard XCTWaiter.wait(for: [finished], timeout: timeout) == .completed else {
            process.terminate()
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }
}
