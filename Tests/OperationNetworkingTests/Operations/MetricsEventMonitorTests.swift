import CoreMetrics
import Foundation
import Metrics
import MetricsTestKit
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The process's recording metrics factory, bootstrapped on first use (`MetricsSystem` takes one
/// bootstrap per process; the tests of a class share it and reset it in `setUp`).
enum TestMetricsSystem {
    static let shared: TestMetrics = {
        let metrics = TestMetrics()
        MetricsSystem.bootstrap(metrics)
        return metrics
    }()
}

/// MetricsEventMonitor: OpenTelemetry's HTTP client metrics, recorded through the bootstrapped
/// `MetricsSystem`, for real requests to the loopback server.
final class MetricsEventMonitorTests: CacheTestCase {
    private var metrics: TestMetrics { TestMetricsSystem.shared }

    override func setUpWithError() throws {
        try super.setUpWithError()
        metrics.reset()
    }

    /// Runs `operation` with a metrics monitor and waits until it turned finished (the monitor has run).
    @discardableResult
    private func measure(_ operation: HTTPRequestOperation) -> Outcome {
        operation.eventMonitors = [MetricsEventMonitor()]
        let outcome = run(operation)
        XCTAssertTrue(eventually { operation.isFinished })
        return outcome
    }

    /// The one duration recorded, as its dimensions and its value in seconds.
    private func onlyDuration(file: StaticString = #filePath, line: UInt = #line) throws -> ([String: String], Double) {
        let timers = metrics.timers(label: "http.client.request.duration")
        XCTAssertEqual(timers.count, 1, "\(timers)", file: file, line: line)
        let timer = try XCTUnwrap(timers.first, file: file, line: line)
        XCTAssertEqual(timer.values.count, 1, "one duration per finished operation", file: file, line: line)
        XCTAssertEqual(timer.displayUnit, .seconds, file: file, line: line)
        return (dictionary(timer.dimensions), Double(try XCTUnwrap(timer.values.first, file: file, line: line)) / 1e9)
    }

    private func dictionary(_ dimensions: [(String, String)]) -> [String: String] {
        Dictionary(dimensions, uniquingKeysWith: { first, _ in first })
    }

    func testASuccessRecordsItsDurationSizesAndTheRequestInFlight() throws {
        var request = request("/upload", method: "POST")
        request.httpBody = Data(repeating: 7, count: 1234)
        let operation = HTTPRequestOperation(request: request)
        XCTAssertTrue(measure(operation).isSuccess)
        let (dimensions, seconds) = try onlyDuration()
        XCTAssertEqual(dimensions, ["http.request.method": "POST", "http.response.status_code": "200",
                                    "server.address": "127.0.0.1", "server.port": "\(server.port)",
                                    "network.protocol.version": "1.1", "url.scheme": "http",
                                    "onet.cache.status": "notConsulted"])
        XCTAssertGreaterThan(seconds, 0)
        XCTAssertLessThan(seconds, 10)
        let sent = try XCTUnwrap(metrics.recorders(label: "http.client.request.body.size").first)
        XCTAssertEqual(sent.values, [1234])
        XCTAssertEqual(server.requests.first?.body.count, 1234, "the size is what went over the wire")
        let received = try XCTUnwrap(metrics.recorders(label: "http.client.response.body.size").first)
        XCTAssertEqual(received.values, [Double(operation.responseData?.count ?? -1)])
        XCTAssertEqual(dictionary(received.dimensions), dimensions)
        let active = try XCTUnwrap(metrics.meters(label: "http.client.active_requests").first)
        XCTAssertEqual(active.values, [1, 0], "counted in when it started, out when it finished")
        XCTAssertEqual(dictionary(active.dimensions), ["server.address": "127.0.0.1", "server.port": "\(server.port)",
                                                        "url.scheme": "http"])
    }

    func testA404IsAFailureNamedByItsStatus() throws {
        XCTAssertNotNil(measure(HTTPRequestOperation(request: request("/status/404"))).error)
        let (dimensions, _) = try onlyDuration()
        XCTAssertEqual(dimensions["http.response.status_code"], "404")
        XCTAssertEqual(dimensions["error.type"], "404")
        XCTAssertEqual(dimensions["http.request.method"], "GET")
    }

    func testARefusedConnectionIsNamedByItsURLErrorCodeWithNoStatus() throws {
        var refused = URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:1/path?q=1")))
        refused.timeoutInterval = 5
        XCTAssertEqual(measure(HTTPRequestOperation(request: refused)).urlErrorCode, .cannotConnectToHost)
        let (dimensions, _) = try onlyDuration()
        XCTAssertEqual(dimensions, ["http.request.method": "GET", "server.address": "127.0.0.1", "server.port": "1",
                                    "url.scheme": "http", "error.type": "cannotConnectToHost",
                                    "onet.cache.status": "miss"])
        XCTAssertTrue(metrics.recorders(label: "http.client.response.body.size").isEmpty, "no response, no size")
        XCTAssertEqual(metrics.meters(label: "http.client.active_requests").first?.values, [1, 0])
    }

    func testARetriedRequestIsOneDurationWithItsLastStatus() throws {
        let operation = HTTPRequestOperation(request: request("/flaky/1/\(UUID().uuidString)"))
        operation.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 1)
        XCTAssertTrue(measure(operation).isSuccess)
        XCTAssertEqual(server.requests.count, 2, "a 503, then the 200")
        let (dimensions, _) = try onlyDuration()
        XCTAssertEqual(dimensions["http.response.status_code"], "200")
        XCTAssertNil(dimensions["error.type"])
    }

    func testACacheHitIsRecordedWithItsCacheStatus() throws {
        let path = "/cache/metrics?cc=max-age%3D600"
        fetch(path) { $0.eventMonitors = [MetricsEventMonitor()] }
        let hit = fetch(path) { $0.eventMonitors = [MetricsEventMonitor()] }
        XCTAssertTrue(eventually { hit.isFinished })
        XCTAssertEqual(server.requests.count, 1, "the hit made no request")
        let statuses = metrics.timers(label: "http.client.request.duration").map { dictionary($0.dimensions)["onet.cache.status"] }
        XCTAssertEqual(Set(statuses), ["stored", "hit"])
        let hitTimer = try XCTUnwrap(metrics.timers(label: "http.client.request.duration")
            .first { dictionary($0.dimensions)["onet.cache.status"] == "hit" })
        XCTAssertEqual(dictionary(hitTimer.dimensions)["http.response.status_code"], "200")
        XCTAssertEqual(hitTimer.values.count, 1)
    }

    /// Paths, query strings and header values are unbounded: none becomes a dimension, and many
    /// requests to one server make one series per outcome.
    func testManyPathsQueriesAndHeaderValuesMakeFewSeriesAndNeverAppearInThem() throws {
        let monitor = MetricsEventMonitor()
        var secrets: [String] = []
        var operations: [HTTPRequestOperation] = []
        for index in 0..<40 {
            let secret = "SECRET\(index)X"
            secrets.append(secret)
            var request = request(index % 2 == 0 ? "/echo?token=\(secret)" : "/missing/\(secret)?key=\(secret)")
            request.setValue("Bearer \(secret)", forHTTPHeaderField: "Authorization")
            request.setValue(secret, forHTTPHeaderField: "X-Trace-Me")
            let operation = HTTPRequestOperation(request: request)
            operation.eventMonitors = [monitor]
            operations.append(operation)
        }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 8
        queue.addOperations(operations, waitUntilFinished: true)
        let all = operations
        XCTAssertTrue(eventually { all.allSatisfy(\.isFinished) })
        XCTAssertEqual(server.requests.count, 40)

        let timers = metrics.timers(label: "http.client.request.duration")
        XCTAssertEqual(timers.map(\.values.count).reduce(0, +), 40)
        XCTAssertEqual(timers.count, 2, "one series for the 200s, one for the 404s: \(timers)")
        let series = timers.map(\.dimensions) + metrics.recorders.map(\.dimensions) + metrics.meters.map(\.dimensions)
        let values = Set(series.flatMap { $0.map(\.1) })
        XCTAssertLessThanOrEqual(values.count, 10, "\(values)")
        for value in values {
            XCTAssertFalse(secrets.contains { value.contains($0) } || value.contains("/") || value.contains("?"),
                           "a dimension carries a path, query or header value: \(value)")
        }
    }
}
