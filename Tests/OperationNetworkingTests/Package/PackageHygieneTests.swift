import Foundation
@testable import OperationNetworking
import XCTest

/// A clean package: no test-only product, no comment citing a document outside the repository or
/// carrying a benchmark figure, and a library that never writes to stderr.
final class PackageHygieneTests: LibraryTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private func sources(under path: String) throws -> [(String, String)] {
        let base = root.appendingPathComponent(path)
        let enumerator = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil)
        var files: [(String, String)] = []
        while let url = enumerator?.nextObject() as? URL {
            guard ["swift", "c", "h"].contains(url.pathExtension) else { continue }
            files.append((url.path, try String(contentsOf: url, encoding: .utf8)))
        }
        return files
    }

    func testTheTestServerIsNotAProduct() throws {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        XCTAssertFalse(manifest.contains(#".library(name: "OperationNetworkingTestServer""#),
                       "users must not be able to depend on (and build) SwiftNIO through the test server")
        XCTAssertTrue(manifest.contains(#".library(name: "OperationNetworking""#))
    }

    /// A package that depends on the library resolves swift-log, swift-metrics and
    /// swift-distributed-tracing (whose `Tracing` carries `ServiceContextModule`) and nothing else: the
    /// tool, the test server, SwiftNIO and the documentation plugin are the repository's own, never a
    /// consumer's.
    func testAConsumerOfTheLibraryResolvesOnlyLoggingMetricsAndTracing() throws {
        let consumer = FileManager.default.temporaryDirectory.appendingPathComponent("onet-consumer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: consumer) }
        let sources = consumer.appendingPathComponent("Sources/App")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let manifest = """
            // swift-tools-version:6.0
            import PackageDescription
            let package = Package(name: "App", dependencies: [.package(path: "\(root.path)")], targets: [
                .executableTarget(name: "App", dependencies: [.product(name: "OperationNetworking", package: "\(root.lastPathComponent)")]),
            ])
            """
        try Data(manifest.utf8).write(to: consumer.appendingPathComponent("Package.swift"))
        try Data("import OperationNetworking\n".utf8).write(to: sources.appendingPathComponent("main.swift"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "package", "resolve", "--package-path", consumer.path]
        let log = Pipe()
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let output = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, output)
        let resolved = try Data(contentsOf: consumer.appendingPathComponent("Package.resolved"))
        let pins = try XCTUnwrap((try JSONSerialization.jsonObject(with: resolved) as? [String: Any])?["pins"] as? [[String: Any]])
        XCTAssertEqual(pins.compactMap { $0["identity"] as? String }.sorted(),
                       ["swift-distributed-tracing", "swift-log", "swift-metrics"])
    }

    func testNoCommentCitesADocumentOutsideTheRepository() throws {
        for (path, text) in try sources(under: "Sources") + sources(under: "Tests") {
            for name in ["API" + ".md", "afn2-" + "api", "shared/" + "bench/"] {
                XCTAssertFalse(text.contains(name), "\(path) cites \(name), which is not in the repository")
            }
        }
    }

    /// Measurements drift from the code they describe (a comment said 1 MiB long after the code freed
    /// 4 MiB): comments say why, and bench/README.md keeps the figures.
    func testNoLibraryCommentCarriesABenchmarkFigure() throws {
        for (path, text) in try sources(under: "Sources/OperationNetworking") {
            for figure in ["MB/s", "req/s", "requests per second", "minor faults", "thread switches", "recvfrom` calls"] {
                XCTAssertFalse(text.contains(figure), "\(path) carries a measurement (\(figure)); bench/README.md is its place")
            }
        }
    }

    func testTheLibrarySourcesHaveNoWayToStderr() throws {
        for (path, text) in try sources(under: "Sources/OperationNetworking") {
            for call in ["standardError", "print(", "fputs(", "NSLog("] {
                XCTAssertFalse(text.contains(call), "\(path) uses \(call)")
            }
        }
    }

    /// Runs `body` with file descriptor 2 pointed at a file; returns what was written to it.
    private func capturingStderr(_ body: () throws -> Void) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("onet-stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: file) }
        let handle = try FileHandle(forWritingTo: file)
        let saved = dup(2)
        dup2(handle.fileDescriptor, 2)
        defer {
            dup2(saved, 2)
            close(saved)
            try? handle.close()
        }
        try body()
        return try String(contentsOf: file, encoding: .utf8)
    }

    func testWaitOnCallbackQueueAndMalformedXMLPrintNothing() throws {
        let written = try capturingStderr {
            let operation = HTTPRequestOperation(request: URLRequest(url: URL(fileURLWithPath: "/never-sent")))
            operation.cancel()
            let returned = expectation(description: "wait returned")
            CallbackQueues.callback.async {
                operation.start()
                operation.waitUntilFinished()   // runs the operation's handlers inside the wait, silently
                XCTAssertTrue(operation.isFinished)
                returned.fulfill()
            }
            wait(for: [returned], timeout: 5)
            XCTAssertThrowsError(try XMLDocumentResponseSerializer().responseObject(
                for: HTTPURLResponse(url: URL(fileURLWithPath: "/x"), statusCode: 200, httpVersion: nil,
                                     headerFields: ["Content-Type": "text/xml"]),
                data: Data("<a><b></a>".utf8)))
        }
        XCTAssertEqual(written, "", "the library wrote to stderr")
    }
}
