import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A cache whose files are refused never fails a request: the operation goes to the network without
/// it, reports `.notConsulted`, and `LoggingEventMonitor` says why once, on the first operation.
final class CacheFileWarningTests: CacheDirectoryTestCase {
    func testARefusedCacheFolderIsToldOnceAndTheRequestsGoOnWithoutIt() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let loose = directory.appendingPathComponent("loose")
        try CacheFiles.makeFolder(loose.path, mode: 0o777)
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 1 << 20, directory: loose)
        let entries = Recorder<LogEntry>()
        let monitor = LoggingEventMonitor(logger: Logger(label: "test") { _ in CapturingLogHandler(entries: entries) })

        for round in 1...2 {
            let operation = HTTPRequestOperation(request: URLRequest(url: server.url("/cache/loose?cc=max-age%3D600")))
            operation.urlCache = cache
            operation.eventMonitors = [monitor]
            XCTAssertTrue(run(operation).isSuccess, "round \(round)")
            XCTAssertEqual(operation.metrics?.cacheStatus, .notConsulted, "round \(round)")
            XCTAssertTrue(eventually { entries.all.filter { $0.message == "HTTP request finished" }.count == round })
        }
        XCTAssertEqual(server.requests.count, 2, "each request went to the network")
        let warnings = entries.all.filter { $0.level == .warning }
        XCTAssertEqual(warnings.map(\.message), ["HTTP cache files not used"], "told once")
        let reason = try XCTUnwrap(warnings.first?.metadata["reason"])
        XCTAssertTrue(reason.contains(loose.path) && reason.contains("writable by others"), reason)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: loose.path), [], "nothing written in it")
    }
}
