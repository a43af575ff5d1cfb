import Foundation
import OperationNetworkingTestServer
import XCTest

/// `onet serve --help` lists every route and query parameter the server answers, with an example
/// each; the list (`RouteCatalog`) is held against the server's own source so it cannot drift.
final class OnetServeHelpTests: ServerTestCase {
    /// The test server's source folder.
    private var serverSources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/OperationNetworkingTestServer")
    }

    private func matches(_ pattern: String, in text: String) throws -> [String] {
        let expression = try NSRegularExpression(pattern: pattern)
        return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    func testTheCatalogHoldsEveryRouteOfTheDispatchAndEveryParameterTheRoutesRead() throws {
        let routes = try String(contentsOf: serverSources.appendingPathComponent("Routes.swift"), encoding: .utf8)
        var dispatched = Set(try matches(#"case \("([a-z-]+)", [0-9_]\)(?!\s*where)"#, in: routes))
        for (name, argument) in zip(try matches(#"case \("([a-z-]+)", 2\) where argument =="#, in: routes),
                                    try matches(#"where argument == "([a-z]+)""#, in: routes)) {
            dispatched.insert("\(name)/\(argument)")
        }
        XCTAssertGreaterThanOrEqual(dispatched.count, 20, "\(dispatched)")
        // A route's dispatch name: its first segment, and with it a literal second one (cookies/set).
        var catalogued = Set<String>()
        for route in RouteCatalog.routes {
            let segments = route.path.split(separator: "/").map(String.init)
            guard let first = segments.first else { continue }
            catalogued.insert(first)
            if segments.count > 1, segments[1].allSatisfy(\.isLowercase) { catalogued.insert(first + "/" + segments[1]) }
        }
        for name in dispatched {
            XCTAssertTrue(catalogued.contains(name), "route \(name) is served but not in RouteCatalog (onet serve --help)")
        }
        XCTAssertEqual(dispatched.subtracting(catalogued), [], "served routes missing from the catalogue")
        var read = Set<String>()
        for file in try FileManager.default.contentsOfDirectory(atPath: serverSources.path) where file.hasSuffix("Routes.swift") {
            let source = try String(contentsOf: serverSources.appendingPathComponent(file), encoding: .utf8)
            read.formUnion(try matches(#"query\["([A-Za-z]+)"\]"#, in: source))
            read.formUnion(try matches(#"\.int\("([A-Za-z]+)"\)"#, in: source))
            read.formUnion(try matches(#"item\.name == "([A-Za-z]+)""#, in: source))
        }
        let listed = Set(RouteCatalog.routes.flatMap { $0.parameters.map(\.name) })
        XCTAssertTrue(read.contains("chunkDelayMs"), "\(read)")
        for parameter in read {
            XCTAssertTrue(listed.contains(parameter), "query parameter \(parameter) is read but not listed")
        }
    }

    func testServeHelpListsEveryRouteParameterAndExample() throws {
        let help = try runOnetCapturing(["serve", "--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        let text = help.text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        XCTAssertGreaterThanOrEqual(RouteCatalog.routes.count, 22)
        for route in RouteCatalog.routes {
            XCTAssertTrue(text.contains(route.path + ":"), "\(route.path) is not listed")
            XCTAssertTrue(text.contains("onet request 'BASE\(route.example)'"), "\(route.path) has no example")
            for parameter in route.parameters { XCTAssertTrue(text.contains(parameter.name + "="), "\(route.path): \(parameter.name)") }
        }
    }

    /// Every example is a route the server answers (not its 404), the hanging ones aside; asked with
    /// HEAD, so a throttled example costs no time.
    func testEveryExampleIsServed() throws {
        let hanging: Set<String> = ["/stall", "/stall-headers", "/redirect-loop"]
        for route in RouteCatalog.routes where !hanging.contains(route.path) {
            let (operation, _) = run(request(route.example, method: "HEAD", timeout: 5))
            if let status = operation.response?.statusCode {
                XCTAssertNotEqual(status, 404, route.example)
            }
        }
        let paths = server.requests.map(\.path)
        XCTAssertTrue(paths.contains("/bytes/10485760") && paths.contains("/cookies/raw"), "\(paths)")
    }
}
