import Foundation
import XCTest

/// Migration.md maps every public AFN 2.x symbol and renders; every public declaration is documented.
final class DocumentationTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    func testMigrationMapsTheSymbolsThatWereMissing() throws {
        let migration = try text("Migration.md")
        for symbol in ["AFNetworkReachabilityStatusUnknown", ".reachableViaWWAN", ".reachableViaWiFi", ".notReachable",
                       "AFHTTPRequestQueryStringDefaultStyle", "`stringEncoding", "validatesCertificateChain", "`+serializer`",
                       "HTTPRequestOperationWithHTTPMethod:URLString:parameters:success:failure:",
                       "## Errors", "## Porting to Swift 6", "@Sendable", "swiftLanguageMode(.v5)"] {
            XCTAssertTrue(migration.contains(symbol), "Migration.md does not mention \(symbol)")
        }
    }

    func testTablesRenderAndSameMeansSame() throws {
        let lines = try text("Migration.md").components(separatedBy: "\n")
        for (index, line) in lines.enumerated().dropFirst().dropLast() where line.isEmpty {
            // A blank line between two table rows splits the table: the second half renders as text.
            XCTAssertFalse(lines[index - 1].hasPrefix("|") && lines[index + 1].hasPrefix("| "),
                           "blank line inside a table at line \(index + 1)")
        }
        for line in lines where line.hasPrefix("| `HTTPShouldHandleCookies`") || line.contains("| `pinnedCertificates`") {
            XCTAssertFalse(line.hasSuffix("| same |"), "not the same in Swift: \(line)")
        }
        for hidden in ["`NetworkThread`", "Image(format:pixelWidth:", "httpResponse", ".reachableViaEthernet`**"] {
            XCTAssertFalse(lines.contains { $0.hasPrefix("|") && $0.contains(hidden) }, "a row names \(hidden)")
        }
    }

    func testEveryPublicDeclarationHasADocComment() throws {
        let base = root.appendingPathComponent("Sources/OperationNetworking")
        let enumerator = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil)
        var undocumented: [String] = []
        while let url = enumerator?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
            for (index, line) in lines.enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard trimmed.hasPrefix("public ") || trimmed.hasPrefix("open ") else { continue }
                var previous = index - 1
                while previous >= 0, lines[previous].trimmingCharacters(in: .whitespaces).hasPrefix("@") { previous -= 1 }
                if previous < 0 || !lines[previous].trimmingCharacters(in: .whitespaces).hasPrefix("///") {
                    undocumented.append("\(url.lastPathComponent):\(index + 1) \(trimmed)")
                }
            }
        }
        XCTAssertEqual(undocumented, [])
    }
}
