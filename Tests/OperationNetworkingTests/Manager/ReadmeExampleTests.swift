import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The README's usage example, compiled and run; a test keeps the README's copy identical.
final class ReadmeExampleTests: ServerTestCase {
    func testReadmeExampleRunsAndMatchesTheReadme() throws {
        let baseURL = server.baseURL
        let finished = expectation(description: "example")
        finished.expectedFulfillmentCount = 2
        // README example begins
        let manager = HTTPRequestOperationManager(baseURL: baseURL)
        manager.operationQueue.maxConcurrentOperationCount = 4

        let token = manager.GET("echo", parameters: ["user": "ada"], success: { operation, json in
            print("token:", operation.response?.statusCode ?? 0, json ?? "nil")
            finished.fulfill()
        }, failure: { operation, error in
            print("token failed:", error.localizedDescription)
        })

        var request = URLRequest(url: baseURL.appendingPathComponent("bytes/100000"))
        request.timeoutInterval = 30
        let download = HTTPRequestOperation(request: request)
        download.setDownloadProgressBlock { _, total, expected in
            print("downloaded \(total) of \(expected)")
        }
        download.setCompletionBlockWithSuccess({ operation, data in
            print("download:", (data as? Data)?.count ?? 0, "bytes")
            finished.fulfill()
        }, failure: { _, error in
            print("download failed:", error)
        })
        if let token { download.addDependency(token) }   // starts after token's success block returned
        manager.operationQueue.addOperation(download)
        // README example ends
        wait(for: [finished], timeout: 10)
        XCTAssertEqual(server.requests.map(\.path), ["/echo", "/bytes/100000"])

        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("README.md"), encoding: .utf8)
        let begin = try XCTUnwrap(source.range(of: "// README example begins\n"))
        let end = try XCTUnwrap(source.range(of: "        // README example ends"))
        let snippet = source[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }.joined(separator: "\n")
        XCTAssertTrue(readme.contains(snippet), "README.md must contain the example exactly as tested:\n\(snippet)")
    }
}
