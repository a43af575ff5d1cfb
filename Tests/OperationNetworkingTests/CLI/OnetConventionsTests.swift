import Foundation
import XCTest

/// The swift-argument-parser conventions `onet` keeps: help with examples on every subcommand,
/// `--version`, shell completions, and usage errors as one line on standard error.
final class OnetConventionsTests: LibraryTestCase {
    /// The subcommand names listed under `SUBCOMMANDS:` in a help text.
    private func subcommands(inHelp help: String) -> [String] {
        guard let section = help.range(of: "SUBCOMMANDS:") else { return [] }
        var names: [String] = []
        // The section ends at the first blank line; wrapped abstracts are indented further.
        for line in help[section.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).dropFirst() {
            if line.trimmingCharacters(in: .whitespaces).isEmpty { break }
            guard !line.hasPrefix("    ") else { continue }
            if let name = line.split(separator: " ").first { names.append(String(name)) }
        }
        return names
    }

    func testEverySubcommandHasHelpWithExamples() throws {
        let root = try runOnetCapturing(["--help"])
        XCTAssertEqual(root.status, 0)
        var pending = subcommands(inHelp: root.text).map { [$0] }
        XCTAssertTrue(pending.contains(["request"]) && pending.contains(["demo"]), root.text)
        var checked = 0
        while let path = pending.popLast() {
            let help = try runOnetCapturing(path + ["--help"])
            XCTAssertEqual(help.status, 0, "\(path): \(help.stderr)")
            XCTAssertTrue(help.text.contains("USAGE: onet \(path.joined(separator: " "))"), "\(path): \(help.text)")
            XCTAssertTrue(help.text.contains("Example"), "\(path) --help shows no examples")
            pending += subcommands(inHelp: help.text).map { path + [$0] }
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 8, "demo, request, bench, soak, archive (+2), reachability at least")
    }

    func testVersionAndCompletionScripts() throws {
        let version = try runOnetCapturing(["--version"])
        XCTAssertEqual(version.status, 0)
        XCTAssertEqual(version.text.trimmingCharacters(in: .whitespacesAndNewlines), "0.1.0")
        for shell in ["bash", "zsh", "fish"] {
            let script = try runOnetCapturing(["--generate-completion-script", shell])
            XCTAssertEqual(script.status, 0, shell)
            XCTAssertTrue(script.text.contains("request") && script.text.contains("pin-cert"), "\(shell) completions")
        }
    }

    func testUnknownSubcommandOrOptionIsOneLineNamingIt() throws {
        // `onet request` exits 1 for a usage error, as httpie does; the other commands 64 (EX_USAGE).
        for (arguments, named, status) in [(["frobnicate"], "frobnicate", Int32(64)), (["request", "--frobnicate", "x"], "--frobnicate", 1),
                                           (["bench", "--url"], "--url", 64), (["fetch", "--to", "d", "--retry", "-1", "http://h/"], "--retry", 64)] {
            let run = try runOnetCapturing(arguments)
            XCTAssertEqual(run.status, status, "\(arguments)")
            XCTAssertTrue(run.stdout.isEmpty, "\(arguments): errors go to standard error")
            XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, "\(arguments): \(run.stderr)")
            XCTAssertTrue(run.stderr.hasPrefix("onet: ") && run.stderr.contains(named), "\(arguments): \(run.stderr)")
        }
    }
}
