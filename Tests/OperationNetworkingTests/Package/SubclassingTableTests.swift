import Foundation
import XCTest

/// The DocC article Subclassing's table of override points is the library's: every `open` member the
/// library declares is a row, under the classes that declare it, with its exact signature, and nothing
/// else is; `SubclassingOverrides.swift` overrides every row with that signature (a plain import, so
/// it compiles only while each is `open` and spelled so) and subclasses every open class, which the
/// initializer table lists.
final class SubclassingTableTests: LibraryTestCase {
    /// A member of a class: the class's name and the declaration without `open`, `override`, its body
    /// or its layout.
    struct Member: Hashable, CustomStringConvertible {
        let type: String
        let signature: String
        var description: String { "\(type): \(signature)" }
    }

    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    private static func firstMatch(_ pattern: String, in line: String) -> [String]? {
        guard let expression = try? NSRegularExpression(pattern: pattern),
              let match = expression.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) else { return nil }
        return (1..<match.numberOfRanges).map { index in
            Range(match.range(at: index), in: line).map { String(line[$0]) } ?? ""
        }
    }

    /// The members declared with `keyword` (`open` or `override`) in `source`, each under the type
    /// whose declaration (at the start of a line) last preceded it; a declaration runs to its body's `{`.
    static func members(in source: String, keyword: String) -> [Member] {
        let lines = source.components(separatedBy: "\n")
        var type = ""
        var found: [Member] = []
        var index = 0
        while index < lines.count {
            let line = lines[index]
            if let name = firstMatch(#"^(?:(?:open|public|final|@\w+)\s+)*(?:class|extension|struct|enum|protocol)\s+(\w+)"#,
                                     in: line)?.first {
                type = name
            }
            if firstMatch(#"^\s+(?:@\w+\s+)*(\#(keyword))\s"#, in: line) != nil {
                var declaration = line
                while !declaration.contains("{"), index + 1 < lines.count {
                    index += 1
                    declaration += " " + lines[index]
                }
                let head = declaration.prefix { $0 != "{" }
                let words = head.split(whereSeparator: \.isWhitespace).filter { $0 != "open" && $0 != "override" }
                found.append(Member(type: type, signature: words.joined(separator: " ")))
            }
            index += 1
        }
        return found
    }

    /// The library's source files.
    private func librarySources() throws -> [String] {
        let folder = Self.root.appendingPathComponent("Sources/OperationNetworking")
        let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        var sources: [String] = []
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            sources.append(try String(contentsOf: url, encoding: .utf8))
        }
        XCTAssertGreaterThan(sources.count, 50)
        return sources
    }

    private var article: String {
        get throws { try Self.text("Sources/OperationNetworking/OperationNetworking.docc/Subclassing.md") }
    }

    private var overrides: String {
        get throws { try Self.text("Tests/OperationNetworkingTests/Package/SubclassingOverrides.swift") }
    }

    /// The override table's rows as members: the first cell's signature under each class the second names.
    private func tableRows() throws -> [Member] {
        try article.components(separatedBy: "\n").filter { $0.hasPrefix("| `") && !$0.hasPrefix("| ``") }.flatMap { row in
            let cells = row.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            XCTAssertGreaterThanOrEqual(cells.count, 4, row)
            let signature = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let classes = cells[2].components(separatedBy: "``").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            XCTAssertFalse(classes.isEmpty, row)
            return classes.map { Member(type: $0, signature: signature) }
        }
    }

    func testTheTableListsEveryOpenMemberOfTheLibraryAndNothingElse() throws {
        let declared = try librarySources().flatMap { Self.members(in: $0, keyword: "open") }
        XCTAssertEqual(Set(declared).count, declared.count, "one open declaration per class and signature")
        let listed = try tableRows()
        XCTAssertEqual(Set(listed).count, listed.count, "a class listed twice for one signature")
        XCTAssertGreaterThanOrEqual(listed.count, 50)
        for member in Set(declared).subtracting(listed) {
            XCTFail("open but not in Subclassing.md's table: \(member)")
        }
        for member in Set(listed).subtracting(declared) {
            XCTFail("in Subclassing.md's table but not declared open so: \(member)")
        }
    }

    func testEveryRowIsOverriddenWithItsExactSignature() throws {
        let source = try overrides
        var superclass: [String: String] = [:]
        for line in source.components(separatedBy: "\n") {
            if let names = Self.firstMatch(#"^final class (\w+): (\w+)"#, in: line) { superclass[names[0]] = names[1] }
        }
        let overridden = Self.members(in: source, keyword: "override").compactMap { member in
            superclass[member.type].map { Member(type: $0, signature: member.signature) }
        }
        let listed = Set(try tableRows())
        for member in listed.subtracting(overridden) {
            XCTFail("SubclassingOverrides.swift does not override \(member) with the table's signature")
        }
        for member in Set(overridden).subtracting(listed) {
            XCTFail("SubclassingOverrides.swift overrides what the table does not list: \(member)")
        }
    }

    func testEveryOpenClassIsSubclassedAndHasItsInitializerRow() throws {
        var open: Set<String> = []
        for source in try librarySources() {
            for line in source.components(separatedBy: "\n") {
                if let name = Self.firstMatch(#"^open class (\w+)"#, in: line)?.first { open.insert(name) }
            }
        }
        XCTAssertGreaterThanOrEqual(open.count, 15)
        let source = try overrides
        let subclassed = Set(source.components(separatedBy: "\n").compactMap { Self.firstMatch(#"^final class \w+: (\w+)"#, in: $0)?.first })
        XCTAssertEqual(open.subtracting(subclassed), [], "open classes without a subclass in SubclassingOverrides.swift")
        let initializerRows = Set(try article.components(separatedBy: "\n").compactMap { Self.firstMatch(#"^\| ``(\w+)`` \|"#, in: $0)?.first })
        XCTAssertEqual(initializerRows, open, "the initializer table names exactly the open classes")
        let catalog = try Self.text("Sources/OperationNetworking/OperationNetworking.docc/OperationNetworking.md")
        XCTAssertTrue(catalog.contains("- <doc:Subclassing>"), "the catalog's topics link the article")
    }

    /// The article's example is a class the test target compiles, character for character.
    func testTheArticlesExampleCompiles() throws {
        let blocks = Swift6PortBuild.swiftBlocks(in: try article)
        XCTAssertEqual(blocks.count, 1)
        let example = try XCTUnwrap(blocks.first)
        XCTAssertTrue(example.contains("required init(request: URLRequest)"), example)
        XCTAssertTrue(try overrides.contains(example), "SubclassingOverrides.swift lacks the article's example:\n\(example)")
    }
}
