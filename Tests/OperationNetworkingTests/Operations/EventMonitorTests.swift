import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Records what a monitor is told, where, and whether two calls ever overlapped.
final class RecordingMonitor: EventMonitor, @unchecked Sendable {   // every stored var is guarded by lock
    private let lock = NSLock()
    private var recorded: [String] = []        // guarded by lock
    private var threads: Set<String> = []      // guarded by lock
    private var inFlight = 0                   // guarded by lock
    private var overlapped = false             // guarded by lock
    /// Widens the window in which an overlapping call would be seen.
    let dwell: useconds_t

    init(dwell: useconds_t = 0) { self.dwell = dwell }

    var events: [String] { lock.withLock { recorded } }
    var threadNames: Set<String> { lock.withLock { threads } }
    var sawOverlap: Bool { lock.withLock { overlapped } }

    private func record(_ event: String) {
        lock.withLock {
            inFlight += 1
            if inFlight > 1 { overlapped = true }
            recorded.append(event)
            threads.insert(Thread.current.name ?? "")
        }
        if dwell > 0 { usleep(dwell) }
        lock.withLock { inFlight -= 1 }
    }

    func operationDidStart(_ operation: URLConnectionOperation) {
        record("start \(operation.request.url?.path ?? "")")
    }
    func operation(_ operation: URLConnectionOperation, didReceive response: HTTPURLResponse) {
        record("response \(response.statusCode)")
    }
    func operationDidFinish(_ operation: URLConnectionOperation) {
        record("finish finished=\(operation.isFinished) error=\((operation.error as? URLError)?.code.rawValue ?? 0)")
    }
}

/// Event monitors: order, once-only, where they run, and how they travel with managers and copies.
final class EventMonitorTests: ServerTestCase {
    func testStartResponseAndFinishComeInOrderOffTheNetworkThreadAndBeforeIsFinished() {
        let monitor = RecordingMonitor()
        let operation = HTTPRequestOperation(request: request("echo"))
        operation.eventMonitors = [monitor]
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertTrue(eventually { operation.isFinished })
        XCTAssertEqual(monitor.events, ["start /echo", "response 200", "finish finished=false error=0"])
        XCTAssertFalse(monitor.threadNames.contains("OperationNetworking.network"))
    }

    func testAnOperationCancelledBeforeItStartedGetsOnlyTheFinish() {
        let monitor = RecordingMonitor()
        let operation = HTTPRequestOperation(request: request("echo"))
        operation.eventMonitors = [monitor]
        operation.cancel()
        let outcome = run(operation)
        XCTAssertEqual(outcome.urlErrorCode, .cancelled)
        // Handlers run before the finish, which monitors hear of before isFinished.
        XCTAssertTrue(eventually { operation.isFinished })
        XCTAssertEqual(monitor.events, ["finish finished=false error=\(URLError.cancelled.rawValue)"])
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testRedirectsStillGiveOneResponseAndAFailureStillOneFinish() {
        let monitor = RecordingMonitor()
        let redirected = HTTPRequestOperation(request: request("redirect/2"))
        redirected.eventMonitors = [monitor]
        XCTAssertTrue(run(redirected).isSuccess)
        XCTAssertTrue(eventually { redirected.isFinished })
        XCTAssertEqual(monitor.events, ["start /redirect/2", "response 200", "finish finished=false error=0"])

        let failing = RecordingMonitor()
        let refused = HTTPRequestOperation(request: URLRequest(url: URL(string: "http://127.0.0.1:1/")!))
        refused.eventMonitors = [failing]
        XCTAssertEqual(run(refused).urlErrorCode, .cannotConnectToHost)
        XCTAssertTrue(eventually { refused.isFinished })
        XCTAssertEqual(failing.events, ["start /", "finish finished=false error=\(URLError.cannotConnectToHost.rawValue)"])
    }

    func testAPausedAndResumedDownloadStartsOnceWithAResponsePerTransfer() {
        let monitor = RecordingMonitor()
        let path = "/bytes/400000?chunkSize=4000&chunkDelayMs=5"
        let operation = HTTPRequestOperation(request: request(path))
        operation.eventMonitors = [monitor]
        let (done, box) = recordOutcome(of: operation)
        startAndAwaitBytes(operation, timeout: 5)
        operation.pause()
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertTrue(eventually { operation.isFinished })
        XCTAssertEqual(server.requests.count, 2)
        XCTAssertEqual(monitor.events, ["start /bytes/400000", "response 200", "response 206", "finish finished=false error=0"])
    }

    func testAMonitorIsNeverCalledConcurrently() {
        let monitor = RecordingMonitor(dwell: 300)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 8
        var expectations: [XCTestExpectation] = []
        for index in 0..<24 {
            let operation = HTTPRequestOperation(request: request("echo?i=\(index)"))
            operation.eventMonitors = [monitor]
            // A concurrent completion queue: handlers (and finishes) of different operations overlap.
            operation.completionQueue = DispatchQueue.global()
            expectations.append(recordOutcome(of: operation).0)
            queue.addOperation(operation)
        }
        wait(for: expectations, timeout: 20)
        XCTAssertTrue(eventually { monitor.events.count == 24 * 3 })
        XCTAssertFalse(monitor.sawOverlap, "a monitor was called concurrently with itself")
    }

    func testTheManagerCopiesItsMonitorsOntoOperationsAndCopiesKeepThem() throws {
        let monitor = RecordingMonitor()
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.eventMonitors = [monitor]
        let done = expectation(description: "GET")
        let operation = manager.GET("echo", parameters: nil, success: { _, _ in done.fulfill() }, failure: nil)
        wait(for: [done], timeout: 10)
        XCTAssertTrue(eventually { monitor.events.count == 3 })
        XCTAssertEqual(monitor.events.first, "start /echo")

        let copied = try XCTUnwrap(operation?.copy() as? HTTPRequestOperation)
        XCTAssertTrue(copied.eventMonitors.first === monitor)
        let copiedManager = try XCTUnwrap(manager.copy() as? HTTPRequestOperationManager)
        XCTAssertTrue(copiedManager.eventMonitors.first === monitor)
        // Not archived: a decoded manager has none.
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: SafeArchive.archive(manager))
        XCTAssertTrue(restored.eventMonitors.isEmpty)
    }
}
