import Foundation
import Logging
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// "Did start" means the operation started: the monitor's start comes before the request's first
/// byte, so its duration covers what the library's own metrics measure, and the start notification
/// and monitor call always come before the finish. (Before: the start left from the network thread,
/// held up to 1 ms, and the logged duration fell short of the metrics' total by up to a millisecond.)
final class StartTimingTests: ServerTestCase {
    /// Below the metrics' total by no more than this; a late start falls short by a whole round trip.
    private let margin: TimeInterval = 0.0005

    func testTheLoggedDurationCoversTheMetricsTotalAndStartPrecedesFinish() throws {
        for round in 0..<30 {
            let entries = Recorder<LogEntry>()
            let logger = Logger(label: "test") { _ in CapturingLogHandler(entries: entries) }
            let operation = HTTPRequestOperation(request: request("delay/5"))
            operation.eventMonitors = [LoggingEventMonitor(logger: logger)]
            let notifications = Recorder<String>()
            let observers = [Notification.Name.operationDidStart, .operationDidFinish].map { name in
                NotificationCenter.default.addObserver(forName: name, object: operation, queue: nil) { note in
                    notifications.append(note.name == .operationDidStart ? "start" : "finish")
                }
            }
            defer { observers.forEach(NotificationCenter.default.removeObserver) }

            XCTAssertTrue(run(operation).isSuccess, "round \(round)")
            XCTAssertTrue(eventually { entries.all.contains { $0.level == .info } && notifications.all.count == 2 })

            let lines = entries.all
            XCTAssertEqual(lines.map(\.message), ["HTTP request started", "HTTP response received", "HTTP request finished"],
                           "round \(round)")
            XCTAssertEqual(notifications.all, ["start", "finish"], "round \(round)")
            let total = try XCTUnwrap(operation.metrics?.total)
            let logged = try XCTUnwrap(lines.last?.metadata["duration"].flatMap(Double.init))
            XCTAssertGreaterThanOrEqual(total, 0.005, "round \(round)")
            XCTAssertGreaterThanOrEqual(logged, total - margin, "round \(round): logged \(logged) s, metrics \(total) s")
        }
    }
}
