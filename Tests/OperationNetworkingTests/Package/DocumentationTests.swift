import Foundation
import XCTest

/// Migration.md maps every public AFN 2.x symbol and renders; every public declaration is documented.
final class DocumentationTests: LibraryTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The cells of every table row of `markdown` (header and separator rows included); a `|` inside a
    /// code span does not split a cell.
    private func tableRows(_ markdown: String) -> [[String]] {
        markdown.components(separatedBy: "\n").filter { $0.hasPrefix("|") }.map { line in
            var cells: [String] = [], current = "", inCode = false
            for character in line.dropFirst() {
                if character == "`" { inCode.toggle() }
                if character == "|" && !inCode {
                    cells.append(current.trimmingCharacters(in: .whitespaces))
                    current = ""
                } else {
                    current.append(character)
                }
            }
            return cells
        }
    }

    /// A row whose first cell mentions `afn` and whose second cell mentions `swift`.
    private func assertMapped(_ afn: String, to swift: String, in rows: [[String]],
                              file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(rows.contains { $0.count >= 2 && $0[0].contains(afn) && $0[1].contains(swift) },
                      "no row maps \(afn) to \(swift)", file: file, line: line)
    }

    func testMigrationMapsEachAFNSymbolToItsSwiftName() throws {
        let rows = tableRows(try text("Migration.md"))
        let mappings: [(String, String)] = [
            ("AFNetworkReachabilityStatusUnknown", "NetworkReachabilityStatus.unknown"),
            ("…ReachableViaWWAN", ".reachableViaWWAN"),
            ("…ReachableViaWiFi", ".reachableViaWiFi"),
            ("AFHTTPRequestQueryStringDefaultStyle", "HTTPRequestSerializer.QueryStringSerializationStyle.default"),
            ("`stringEncoding`", "stringEncoding: String.Encoding"),
            ("`validatesCertificateChain`", "dropped"),
            ("`+serializer`", "`init()`"),
            ("`+serializerWithXMLDocumentOptions:`", "XMLDocumentResponseSerializer()` + `options"),
            ("`+serializerWithFormat:readOptions:`", "PropertyListResponseSerializer()` + `format`, `readOptions`"),
            ("`+serializerWithFormat:writeOptions:`", "PropertyListRequestSerializer()"),
            ("`+serializerWithReadingOptions:`", "JSONResponseSerializer()"),
            ("`initWithReachability:`", "dropped"),
            ("`HTTPRequestOperationWithHTTPMethod:URLString:parameters:success:failure:`",
             "`httpRequestOperation(withHTTPMethod:URLString:parameters:success:failure:)`"),
            ("`HTTPShouldHandleCookies`", "`httpShouldHandleCookies`"),
            ("`pinnedCertificates`", "`pinnedCertificates: Set<Data>`"),
            ("`outputStream`", "`nil` (the default) means in memory, read as `responseData`"),
            ("`completionQueue`", "`nil` (the default) means the library's serial callback queue"),
            ("`AFHTTPRequestOperation.response`", "`response: HTTPURLResponse?`"),
            // Exact types where a naive reading of the header goes wrong (DocumentedSignatureTests
            // compiles them), and the challenge sender's calls as the answer the block returns.
            ("`+batchOfRequestOperations:progressBlock:completionBlock:`", "progress: (@Sendable (Int, Int) -> Void)?"),
            ("`setUploadProgressBlock:`", "(@Sendable (Int, Int64, Int64) -> Void)?"),
            ("`setDownloadProgressBlock:`", "(@Sendable (Int, Int64, Int64) -> Void)?"),
            ("`acceptableContentTypes`", "`var acceptableContentTypes: Set<String>?`"),
            ("useCredential:credential forAuthenticationChallenge:", "`(.useCredential, credential)`"),
            ("continueWithoutCredentialForAuthenticationChallenge:", "`(.useCredential, nil)`"),
            ("sender cancelAuthenticationChallenge:", "`(.cancelAuthenticationChallenge, nil)`"),
            ("performDefaultHandlingForAuthenticationChallenge:", "`(.performDefaultHandling, nil)`"),
            ("rejectProtectionSpaceAndContinueWithChallenge:", "`(.rejectProtectionSpace, nil)`"),
            ("`URLConnectionOperation.defaultCompletionQueue`", "needs a public name"),
        ]
        for (afn, swift) in mappings { assertMapped(afn, to: swift, in: rows) }
        // Both tables that list `completionQueue` (operation and manager) state the difference.
        let completionQueueRows = rows.filter { $0.first?.contains("`completionQueue`") == true }
        XCTAssertEqual(completionQueueRows.count, 2)
        XCTAssertTrue(completionQueueRows.allSatisfy { $0.count >= 2 && $0[1].contains("main queue") })

        let migration = try text("Migration.md")
        for section in ["## Errors", "## Porting to Swift 6", "@Sendable", "swiftLanguageMode(.v5)", "@preconcurrency",
                        "warnings instead of errors", "Retiring them", "Handing `responseObject` on",
                        "`URLConnectionOperation.defaultCompletionQueue`, the library's serial callback queue"] {
            XCTAssertTrue(migration.contains(section), "Migration.md does not mention \(section)")
        }
    }

    /// The reachability text says what the code does: the block and the notification also come when
    /// only the link kind changes (`NetlinkMonitor` reports a state of status and kind).
    func testReachabilityDocsAgreeOnWhenTheBlockRuns() throws {
        let migration = try text("Migration.md")
        XCTAssertFalse(migration.contains("come only when the status changes"), "contradicts the link-kind callbacks")
        XCTAssertTrue(migration.contains("the block and the notification come when the status or the link kind"))
        XCTAssertTrue(migration.contains("the status block also runs\nwhen only the kind changes")
                      || migration.contains("the status block also runs when only the kind changes"))
    }

    func testTablesRenderAndSameMeansSame() throws {
        let lines = try text("Migration.md").components(separatedBy: "\n")
        for (index, line) in lines.enumerated().dropFirst().dropLast() where line.isEmpty {
            // A blank line between two table rows splits the table: the second half renders as text.
            XCTAssertFalse(lines[index - 1].hasPrefix("|") && lines[index + 1].hasPrefix("| "),
                           "blank line inside a table at line \(index + 1)")
        }
        // "same" only where it is exact: these differ in type or in what nil means.
        for symbol in ["`HTTPShouldHandleCookies`", "`pinnedCertificates`", "`outputStream`", "`completionQueue`"] {
            for cells in tableRows(lines.joined(separator: "\n")) where cells.count >= 2 && cells[0].contains(symbol) {
                XCTAssertFalse(cells[1].hasPrefix("same"), "not the same in Swift: \(cells)")
            }
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
