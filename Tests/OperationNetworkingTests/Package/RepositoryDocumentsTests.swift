import Foundation
import XCTest

/// The documents a newcomer reads stay short and say what they need: the README installs and links,
/// Migration.md stays a porting map, the benchmark reference and the Performance article stay
/// references, not notebooks, and every kept benchmark run is in the index.
final class RepositoryDocumentsTests: LibraryTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    private func size(_ path: String) throws -> Int {
        try Data(contentsOf: root.appendingPathComponent(path)).count
    }

    func testTheReadmeIsShortAndSaysHowToInstallAndWhereToGoNext() throws {
        let readme = try text("README.md")
        XCTAssertLessThanOrEqual(try size("README.md"), 14 * 1024, "README.md is read in ten minutes")
        let headings = readme.components(separatedBy: "\n").filter { $0.hasPrefix("## ") }
        XCTAssertEqual(headings.first, "## Two commands (fresh Debian machine with the Swift toolchain)")
        XCTAssertTrue(readme.contains("scripts/demo") && readme.contains("scripts/test"))
        XCTAssertTrue(readme.contains(".package(url: \"https://github.com/"), "no install snippet")
        let manifest = try text("Package.swift")
        let debian = Set(manifest.components(separatedBy: "debian: \"").dropFirst().compactMap { $0.split(separator: "\"").first })
        XCTAssertFalse(debian.isEmpty)
        for package in debian.union(["pkg-config"]) {
            XCTAssertTrue(readme.contains(" \(package)"), "README.md does not name \(package)")
        }
        for version in ["Swift 6.0", "6.3.1", "Debian 12", "7.88"] {
            XCTAssertTrue(readme.contains(version), "README.md does not state \(version)")
        }
        for link in ["LICENSE", "CHANGELOG.md", "CONTRIBUTING.md", "Migration.md", "bench/README.md"] {
            XCTAssertTrue(readme.contains("(\(link))"), "README.md does not link \(link)")
            XCTAssertTrue(FileManager.default.fileExists(atPath: root.appendingPathComponent(link).path), "\(link) is missing")
        }
        XCTAssertTrue(readme.contains("(SECURITY.md)"), "README.md does not link SECURITY.md")
        XCTAssertTrue(try text("LICENSE").hasPrefix("MIT License"))
        XCTAssertEqual(try text("CHANGELOG.md").components(separatedBy: "\n").first { $0.hasPrefix("## ") }, "## Unreleased")
    }

    /// Migration.md maps AFN 2.x's names, says what differs and why, and gives the Swift 6 steps; the
    /// reference lives in the DocC articles and symbol docs, not repeated here. It teaches state owned
    /// by its lock (`Protected`, `Mutex`), never a `// guarded by` comment the compiler cannot check.
    func testMigrationGuideIsAPortingMapOfAtMost30KB() throws {
        XCTAssertLessThanOrEqual(try size("Migration.md"), 30 * 1024)
        XCTAssertFalse(try text("Migration.md").contains("guarded by"), "Migration.md teaches guarded-by comments")
    }

    func testTheBenchmarkReferenceAndThePerformanceArticleStayReferences() throws {
        XCTAssertLessThanOrEqual(try size("bench/README.md"), 15 * 1024)
        let performance = "Sources/OperationNetworking/OperationNetworking.docc/Performance.md"
        XCTAssertLessThanOrEqual(try size(performance), 4 * 1024)
        let article = try text(performance)
        XCTAssertNil(article.range(of: #"[Rr]ound [0-9]"#, options: .regularExpression), "Performance.md names a round")
        let bench = try text("bench/README.md")
        for section in ["## What is measured", "## Reproduce", "## Latest full run", "## Method", "## Goals",
                        "## Tricks that stay"] {
            XCTAssertTrue(bench.contains(section), "bench/README.md has no \(section)")
        }
    }

    /// Runs live in bench/runs/, each listed once in its index, and the index names no missing file.
    func testEveryKeptRunIsInTheIndex() throws {
        let bench = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("bench").path)
        XCTAssertEqual(bench.filter { $0.hasPrefix("harness-") }, [], "a run left in bench/, outside bench/runs/")
        let runs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("bench/runs").path)
            .filter { $0.hasSuffix(".md") && $0 != "README.md" }
        XCTAssertFalse(runs.isEmpty)
        let index = try text("bench/runs/README.md")
        for run in runs {
            XCTAssertEqual(index.components(separatedBy: "](\(run))").count - 1, 1, "\(run) is not listed once in bench/runs/README.md")
        }
        let listed = index.components(separatedBy: "](").dropFirst().compactMap { $0.split(separator: ")").first }
        for file in listed where file.hasSuffix(".md") {
            XCTAssertTrue(runs.contains(String(file)), "bench/runs/README.md lists \(file), which is not there")
        }
    }
    /// Every promise SECURITY.md states names at least one test, and every test it names exists: a
    /// promise without a test, or with a renamed one, is a bug.
    func testEverySecurityPromiseNamesTestsThatExist() throws {
        var known = Set<String>()
        let enumerator = FileManager.default.enumerator(at: root.appendingPathComponent("Tests"), includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            for line in try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n") {
                for keyword in ["func test", "class "] {
                    guard let range = line.range(of: keyword) else { continue }
                    let name = line[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                    known.insert((keyword == "func test" ? "test" : "") + name)
                }
            }
        }
        let rows = try text("SECURITY.md").components(separatedBy: "\n")
            .filter { $0.hasPrefix("| ") && !$0.hasPrefix("| Promise") && !$0.hasPrefix("|---") }
        XCTAssertGreaterThan(rows.count, 30)
        for row in rows {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false)
            let tests = cells.count > 2 ? cells[cells.count - 2].split(separator: "`").enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) } : []
            XCTAssertFalse(tests.isEmpty, "a promise without a test: \(row)")
            for reference in tests {
                for name in reference.split(separator: ".") where !name.isEmpty {
                    XCTAssertTrue(known.contains(String(name)), "SECURITY.md names \(name), which no test file has")
                }
            }
        }
    }
}
