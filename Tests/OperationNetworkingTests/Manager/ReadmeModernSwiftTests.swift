import Foundation
import Logging
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The README's "Modern Swift" example, compiled (Swift 6 mode) and run; the README's copy must match.
final class ReadmeModernSwiftTests: ServerTestCase {
    struct User: Decodable, Sendable {
        let method: String
        let query: [String: String]
    }

    func testModernSwiftExampleRunsAndMatchesTheReadme() async throws {
        let baseURL = server.baseURL
        // README modern example begins
        let manager = HTTPRequestOperationManager(baseURL: baseURL)
        manager.eventMonitors = [LoggingEventMonitor(logger: Logger(label: "api"))]
        manager.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.2)   // 503s and lost connections

        let json = try await manager.GET("echo", parameters: ["user": "ada"])     // Any?: parsed JSON
        let user = try await manager.GET("echo", parameters: ["user": "ada"], as: User.self)
        print(user.query["user"] ?? "", json != nil)

        let operation = manager.httpRequestOperation(withHTTPMethod: "POST", URLString: "echo",
                                                     parameters: ["note": "it's"], success: nil, failure: nil)
        if let operation {
            print(operation.curlDescription)          // Authorization, Cookie, passwords as ***
            manager.operationQueue.addOperation(operation)
            let posted = try await operation.decode(User.self)
            print(posted.method)
        }
        // README modern example ends
        XCTAssertEqual(user.query, ["user": "ada"])
        XCTAssertEqual(server.requests.map(\.method), ["GET", "GET", "POST"])

        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        let begin = try XCTUnwrap(source.range(of: "// README modern example begins\n"))
        let end = try XCTUnwrap(source.range(of: "        // README modern example ends"))
        let snippet = source[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }.joined(separator: "\n")
        XCTAssertTrue(readme.contains(snippet), "README.md must contain the example exactly as tested:\n\(snippet)")
    }
}
