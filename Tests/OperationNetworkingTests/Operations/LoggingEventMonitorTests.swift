import Foundation
import Logging
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// One captured log line.
struct LogEntry: Sendable {
    let level: Logger.Level
    let message: String
    let metadata: [String: String]

    /// Everything the line carries, as one string, for "never contains" checks.
    var flattened: String {
        ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
    }
}

/// A swift-log handler that keeps every line in a recorder.
struct CapturingLogHandler: LogHandler {
    let entries: Recorder<LogEntry>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        entries.append(LogEntry(level: event.level, message: event.message.description,
                                metadata: merged.mapValues { $0.description }))
    }
}

/// LoggingEventMonitor: the lines it writes, and the secrets it never writes.
final class LoggingEventMonitorTests: ServerTestCase {
    private func monitor() -> (LoggingEventMonitor, Recorder<LogEntry>) {
        let entries = Recorder<LogEntry>()
        let logger = Logger(label: "test") { _ in CapturingLogHandler(entries: entries) }
        return (LoggingEventMonitor(logger: logger), entries)
    }

    func testOneInfoLinePerFinishedOperationWithItsFactsAndNoSecrets() throws {
        let (monitor, entries) = monitor()
        var request = request("echo?token=SECRET-QUERY&user=ada")
        request.setValue("Bearer SECRET-AUTHORIZATION", forHTTPHeaderField: "Authorization")
        request.setValue("SECRET-HEADER", forHTTPHeaderField: "X-Api-Key")
        let operation = HTTPRequestOperation(request: request)
        operation.credential = URLCredential(user: "SECRET-USER", password: "SECRET-PASSWORD", persistence: .none)
        operation.eventMonitors = [monitor]
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertTrue(eventually { entries.all.contains { $0.level == .info } })

        let lines = entries.all
        XCTAssertEqual(lines.map(\.message), ["HTTP request started", "HTTP response received", "HTTP request finished"])
        XCTAssertEqual(lines.map(\.level), [.debug, .debug, .info])
        let info = try XCTUnwrap(lines.last)
        XCTAssertEqual(info.metadata["method"], "GET")
        XCTAssertEqual(info.metadata["url"], server.url("echo").absoluteString)
        XCTAssertEqual(info.metadata["status"], "200")
        XCTAssertEqual(info.metadata["bytes"], "\(operation.responseData?.count ?? -1)")
        XCTAssertEqual(info.metadata["attempts"], "1")
        let duration = try XCTUnwrap(info.metadata["duration"].flatMap(Double.init))
        XCTAssertGreaterThan(duration, 0)
        XCTAssertLessThan(duration, 10)
        for line in lines {
            for secret in ["SECRET", "token", "Bearer", "?"] {
                XCTAssertFalse(line.flattened.contains(secret), "a log line shows \(secret): \(line.flattened)")
            }
        }
        // The server did get the secrets: the monitor, not the request, left them out.
        XCTAssertEqual(server.requests.first?.header("Authorization"), "Bearer SECRET-AUTHORIZATION")
    }

    func testAFailedOperationLogsItsErrorAsDomainAndCodeOnly() throws {
        let (monitor, entries) = monitor()
        let operation = HTTPRequestOperation(request: request("echo?token=SECRET-QUERY"))
        operation.eventMonitors = [monitor]
        operation.cancel()
        XCTAssertEqual(run(operation).urlErrorCode, .cancelled)
        XCTAssertTrue(eventually { entries.count == 1 })
        let info = try XCTUnwrap(entries.all.first)
        XCTAssertEqual(info.level, .info)
        XCTAssertEqual(info.metadata["error"], "\(NSURLErrorDomain) \(NSURLErrorCancelled)")
        XCTAssertEqual(info.metadata["duration"].flatMap(Double.init), 0)
        XCTAssertNil(info.metadata["status"])
        XCTAssertFalse(info.flattened.contains("SECRET"))
    }
}
