import Foundation
import XCTest

/// Code written against the documentation compiles in the Swift 6 language mode, in a package that
/// depends on this one by path (`Swift6PortBuild`, one nested build for all three tests):
/// AFNetworking 2.x code ported as written builds with warnings, not errors (`Fixtures/Swift6Port`:
/// blocks capturing `self`, a `var` and a callback type that is not `@Sendable`; overrides spelling
/// AFN's block types); Migration.md's override signatures and Swift 6 remedies compile as written;
/// the Getting started article's snippets compile as a newcomer's `main.swift`.
final class Swift6PortTests: LibraryTestCase {
    func testPortedAFNCodeCompilesWithWarningsOnly() {
        let build = Swift6PortBuild.shared
        build.assertSucceeded()
        let diagnostics = build.diagnostics(in: "PortedClient/PortedClient.swift")
        XCTAssertEqual(diagnostics.filter { $0.contains(" error: ") }, [])
        for warning in ["capture of 'self' with non-Sendable type 'FeedViewModel' in a '@Sendable' closure",
                        "mutation of captured var 'attempts' in concurrently-executing code",
                        "capture of 'completion' with non-Sendable type 'LoadCompletion'",
                        "passing non-Sendable parameter 'success' to function expecting a '@Sendable' closure"] {
            XCTAssertTrue(diagnostics.contains { $0.contains(" warning: \(warning)") },
                          "no warning: \(warning)\n\(build.output.suffix(4000))")
        }
    }

    /// Every extension point Migration.md's "Subclassing" lists is overridden there with the exact
    /// signature, and compiles; the wrapper remedies of "Porting to Swift 6" leave one warning, at
    /// the `@preconcurrency` wrapper's caller, and the multipart operation built without enqueueing
    /// compiles without any.
    func testMigrationMdOverrideSignaturesAndRemediesCompile() {
        let build = Swift6PortBuild.shared
        build.assertSucceeded()
        let snippets = build.migrationSnippets
        for signature in [
            "required init(baseURL: URL?)",
            "override class func manager() -> Self",
            "override func httpRequestOperation(withHTTPMethod method: String, URLString: String, parameters: Any?,",
            "success: Success?, failure: Failure?) -> HTTPRequestOperation?",
            "override func httpRequestOperation(with request: URLRequest, success: Success?,",
            "failure: HTTPRequestOperation.Failure?) -> HTTPRequestOperation {",
            "override func GET(_ URLString: String, parameters: Any?, success: Success?,",
            "override func request(bySerializing request: URLRequest, withParameters parameters: Any?) throws -> URLRequest",
            "override func validate(_ response: HTTPURLResponse?, data: Data?) throws {",
            "override func responseObject(for response: URLResponse?, data: Data?) throws -> Any?",
            "required init(request: URLRequest)",
            "override func encode(with coder: NSCoder)",
            "override func restore(from coder: NSCoder) {",
            "override func copy(with zone: NSZone? = nil) -> Any",
            "override func cancel()",
            "override var response: HTTPURLResponse?",
            "override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool",
            "@preconcurrency\n    func load(_ path: String, success: HTTPRequestOperationManager.Success?)",
            "manager.requestSerializer.multipartFormRequest(",
            "manager.httpRequestOperation(with: request, success:",
        ] {
            XCTAssertTrue(snippets.contains(signature), "Migration.md's compiled blocks do not spell \(signature)")
        }
        let diagnostics = build.diagnostics(in: "PortedClient/MigrationSnippets.swift")
        XCTAssertEqual(diagnostics.filter { $0.contains(" error: ") }, [], "Migration.md's compiled blocks")
        let expected = "warning: capture of 'self' with non-Sendable type 'FeedScreen' in a '@Sendable' closure"
        XCTAssertEqual(diagnostics.filter { !$0.contains(expected) }, [], "only the remedy's warning is expected")
        XCTAssertEqual(diagnostics.filter { $0.contains(expected) }.count, 1, build.output.suffix(4000).description)
    }

    /// The article's apt line names every Debian package the manifest's system libraries come from,
    /// its manifest depends on the repository by URL (no folder name to match), and its snippets
    /// compile in order, without a warning, as `main.swift` of the executable target it declares.
    func testGettingStartedBuildsAsWritten() throws {
        let build = Swift6PortBuild.shared
        let article = try Swift6PortBuild.text("Sources/OperationNetworking/OperationNetworking.docc/GettingStarted.md")
        let manifest = try Swift6PortBuild.text("Package.swift")
        let debian = manifest.components(separatedBy: "debian: \"").dropFirst().compactMap { $0.split(separator: "\"").first }
        XCTAssertFalse(debian.isEmpty)
        let apt = try XCTUnwrap(article.range(of: "apt-get install").map { article[$0.lowerBound...].prefix { $0 != "`" } })
        for package in Set(debian.map(String.init)).union(["pkg-config"]) {
            XCTAssertTrue(apt.split(whereSeparator: { " \\\n".contains($0) }).contains { $0 == package },
                          "the article's apt line lacks \(package)")
        }
        let packageBlock = try XCTUnwrap(build.gettingStartedBlocks.first)
        XCTAssertTrue(packageBlock.contains("import PackageDescription"), "the first Swift block is the manifest")
        XCTAssertTrue(packageBlock.contains(".package(url: \"https://github.com/"), packageBlock)
        XCTAssertFalse(packageBlock.contains(".package(path:"), "a path ties the manifest to a folder name")
        XCTAssertTrue(packageBlock.contains(".executableTarget(name: \"App\""), packageBlock)
        XCTAssertTrue(packageBlock.contains("package: \"OperationNetworking\""), packageBlock)

        build.assertSucceeded()
        XCTAssertEqual(build.diagnostics(in: "GettingStarted/main.swift"), [], "the article's snippets")
    }
}
