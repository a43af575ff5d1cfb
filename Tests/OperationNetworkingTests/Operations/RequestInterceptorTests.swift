import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `RequestInterceptor`: `adapt` before every attempt (on the wire), waiting without holding a thread,
/// its error as the outcome; `retry` after an attempt `RetryPolicy` does not retry, never both;
/// `cancel()` and `pause()` while the interceptor is waited for.
final class RequestInterceptorTests: ServerTestCase {
    private let quick = RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 5)

    /// Every attempt, the policy's retries included, goes out adapted, and each adapt gets the request
    /// as the operation would send it, not an earlier adapt's.
    func testEveryAttemptIsAdaptedOnTheWire() throws {
        let interceptor = TestInterceptor()
        let operation = HTTPRequestOperation(request: request("/flaky/2/\(UUID().uuidString)"))
        operation.retryPolicy = quick
        operation.interceptor = interceptor
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(server.requests.map { $0.header("X-Adapted") }, ["1", "2", "3"], "each attempt adapted, in order")
        XCTAssertEqual(interceptor.seenMarks, [nil, nil, nil], "adapt never sees an earlier adapt's field")
        XCTAssertEqual(operation.attempts, 3)
        XCTAssertEqual(operation.currentRequest.value(forHTTPHeaderField: "X-Adapted"), "3", "currentRequest is what went out")
        XCTAssertEqual(interceptor.retryQuestions.count, 1, "asked only about the attempt the policy did not retry")
    }

    /// A manager copies its interceptor onto the operations it makes.
    func testTheManagerCopiesItsInterceptor() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.interceptor = TestInterceptor()
        let operation = manager.httpRequestOperation(with: request("/echo"), success: nil, failure: nil)
        XCTAssertTrue(operation.interceptor is TestInterceptor)
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(server.requests.first?.header("X-Adapted"), "1")
    }

    /// An adapt that waits holds no thread: while 64 adapts wait (more than the cooperative pool and the
    /// callback queues have threads), other operations, with and without an interceptor, complete.
    func testAnAdaptThatWaitsHoldsNoThread() throws {
        let gate = Gate()
        let waiting = TestInterceptor(gate: gate)
        let held = (0..<64).map { index -> (HTTPRequestOperation, XCTestExpectation, OutcomeBox) in
            let operation = HTTPRequestOperation(request: request("/echo?held=\(index)"))
            operation.interceptor = waiting
            let (done, box) = recordOutcome(of: operation)
            operation.start()
            return (operation, done, box)
        }
        XCTAssertTrue(eventually { waiting.adaptCalls == 64 }, "every adapt began")
        let plain = run(HTTPRequestOperation(request: request("/echo?plain")))
        XCTAssertTrue(plain.isSuccess)
        let other = HTTPRequestOperation(request: request("/echo?other"))
        other.interceptor = TestInterceptor()
        XCTAssertTrue(run(other).isSuccess)
        XCTAssertTrue(held.allSatisfy { $0.0.isExecuting && !$0.0.isFinished }, "the waiting operations stay executing")
        XCTAssertEqual(server.requests.count, 2, "nothing of the waiting operations went out")
        gate.open()
        wait(for: held.map(\.1), timeout: 20)
        XCTAssertTrue(held.allSatisfy { $0.2.value?.isSuccess ?? false })
        let marks = server.requests.filter { $0.uri.contains("held=") }.compactMap { $0.header("X-Adapted") }
        XCTAssertEqual(Set(marks), Set((1...64).map(String.init)), "each sent once, adapted")
    }

    /// An adapt's error is the operation's, and nothing goes out.
    func testAnAdaptErrorFailsTheOperationWithIt() throws {
        let operation = HTTPRequestOperation(request: request("/echo"))
        operation.interceptor = TestInterceptor(failure: Refused())
        let outcome = run(operation)
        XCTAssertTrue(outcome.error is Refused, "\(String(describing: outcome.error))")
        XCTAssertTrue(operation.error is Refused)
        XCTAssertEqual(server.requests.count, 0)
    }

    /// The policy's retry and the interceptor's never both retry one attempt: the interceptor is asked
    /// only about attempts the policy leaves, and each attempt is one request on the wire.
    func testTheInterceptorIsAskedOnlyWhenThePolicyDoesNotRetry() throws {
        // Two 503s: the policy retries the first, gives up on the second (2 attempts); the interceptor
        // retries that one after 10 ms; the third attempt succeeds; the interceptor hears of it too.
        let interceptor = TestInterceptor(retryStatuses: [503: .retryAfter(0.01)])
        let operation = HTTPRequestOperation(request: request("/flaky/2/\(UUID().uuidString)"))
        operation.retryPolicy = RetryPolicy(maxAttempts: 2, baseDelay: 0.01, maxDelay: 5)
        operation.interceptor = interceptor
        let monitor = RetryCounter()
        operation.eventMonitors = [monitor]
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(server.requests.count, 3, "three attempts, one request each")
        XCTAssertEqual(interceptor.retryQuestions, [503, 200], "asked about the attempts the policy left only")
        XCTAssertEqual(operation.attempts, 3)
        XCTAssertTrue(eventually { monitor.attempts == [2, 3] }, "willRetryAfter for each retry: \(monitor.attempts)")
        XCTAssertEqual(operation.responseString, "success 3")
    }

    /// `.retry` for a completed response sends it again, adapted again, and a transport error is
    /// asked about as well.
    func testTheInterceptorRetriesAResponseAndATransportError() throws {
        let interceptor = TestInterceptor(retryStatuses: [404: .retry])
        interceptor.retryLimit = 2
        let operation = HTTPRequestOperation(request: request("/status/404"))
        operation.interceptor = interceptor
        XCTAssertNotNil(run(operation).error)
        XCTAssertEqual(server.requests.map { $0.header("X-Adapted") }, ["1", "2", "3"])
        XCTAssertEqual(interceptor.retryQuestions, [404, 404, 404])

        let refused = TestInterceptor()
        let closed = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:1/"))))
        closed.interceptor = refused
        XCTAssertEqual(run(closed).urlErrorCode, .cannotConnectToHost)
        XCTAssertEqual(refused.retryQuestions, [-1], "asked with the error and no response")
    }

    /// `cancel()` while the adapt waits ends the operation at once as cancelled; the adapt's later
    /// answer is dropped, so nothing is ever sent.
    func testCancelWhileAdaptWaitsEndsAtOnceAndSendsNothing() throws {
        let gate = Gate()
        let interceptor = TestInterceptor(gate: gate)
        let operation = HTTPRequestOperation(request: request("/echo?cancelled"))
        operation.interceptor = interceptor
        let (done, box) = recordOutcome(of: operation)
        operation.start()
        XCTAssertTrue(eventually { interceptor.adaptCalls == 1 })
        operation.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled)
        // The handlers run before the operation turns finished.
        XCTAssertTrue(eventually { operation.isFinished })
        XCTAssertTrue(operation.isCancelled)
        gate.open()
        XCTAssertTrue(eventually { interceptor.adaptsReturned == 1 })
        XCTAssertEqual(interceptor.cancelledAdapts, 1, "the adapt's task was cancelled")
        let server = self.server!
        XCTAssertFalse(eventually(timeout: 1) { !server.requests.isEmpty }, "nothing sent after cancel() returned")
    }

    /// `pause()` while the adapt waits pauses at once with nothing kept; `resume()` adapts again and
    /// sends the request once.
    func testPauseWhileAdaptWaitsAndResumeAdaptsAgain() throws {
        let gate = Gate()
        let interceptor = TestInterceptor(gate: gate)
        let operation = HTTPRequestOperation(request: request("/echo?paused"))
        operation.interceptor = interceptor
        let (done, box) = recordOutcome(of: operation)
        let pausedNotice = expectation(forNotification: .operationDidFinish, object: operation)
        operation.start()
        XCTAssertTrue(eventually { interceptor.adaptCalls == 1 })
        operation.pause()
        XCTAssertTrue(operation.isPaused)
        XCTAssertFalse(operation.isExecuting)
        wait(for: [pausedNotice], timeout: 5)
        gate.open()   // the first adapt's answer comes after the pause: dropped
        XCTAssertTrue(eventually { interceptor.adaptsReturned == 1 })
        XCTAssertTrue(operation.isPaused, "a dropped answer does not start the operation")
        operation.resume()
        wait(for: [done], timeout: 10)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertEqual(interceptor.adaptCalls, 2, "adapted again on resume")
        XCTAssertEqual(server.requests.map { $0.header("X-Adapted") }, ["2"], "one request, the second adapt's")
    }

    /// `cancel()` while the interceptor decides about a retry ends the operation at once as cancelled,
    /// and the retry it then asks for is never sent.
    func testCancelWhileRetryIsDecidedEndsAtOnce() throws {
        let gate = Gate()
        let interceptor = TestInterceptor(retryStatuses: [404: .retry])
        interceptor.retryGate = gate
        let operation = HTTPRequestOperation(request: request("/status/404"))
        operation.interceptor = interceptor
        let (done, box) = recordOutcome(of: operation)
        operation.start()
        XCTAssertTrue(eventually { interceptor.retryQuestions.count == 1 })
        operation.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled)
        gate.open()
        let server = self.server!
        XCTAssertFalse(eventually(timeout: 1) { server.requests.count > 1 }, "the retry was never sent")
        XCTAssertEqual(interceptor.adaptCalls, 1)
    }
}

/// A test interceptor: marks each request it adapts (`X-Adapted: n`), optionally after a gate opens
/// or failing; retries the statuses it is told to, up to `retryLimit` times.
final class TestInterceptor: RequestInterceptor, @unchecked Sendable {   // every stored var is guarded by lock
    private let lock = NSLock()
    private let gate: Gate?
    private let failure: Error?
    private let retryStatuses: [Int: RetryDecision]
    private var calls = 0                 // guarded by lock
    private var returned = 0              // guarded by lock
    private var cancelled = 0             // guarded by lock
    private var marks: [String?] = []     // guarded by lock
    private var questions: [Int] = []     // guarded by lock
    private var limit = Int.max           // guarded by lock
    private var retryWait: Gate?          // guarded by lock

    init(gate: Gate? = nil, failure: Error? = nil, retryStatuses: [Int: RetryDecision] = [:]) {
        self.gate = gate
        self.failure = failure
        self.retryStatuses = retryStatuses
    }

    var adaptCalls: Int { lock.withLock { calls } }
    var adaptsReturned: Int { lock.withLock { returned } }
    var cancelledAdapts: Int { lock.withLock { cancelled } }
    var seenMarks: [String?] { lock.withLock { marks } }
    /// The status of each attempt asked about; -1 for none (a transport error).
    var retryQuestions: [Int] { lock.withLock { questions } }
    var retryLimit: Int {
        get { lock.withLock { limit } }
        set { lock.withLock { limit = newValue } }
    }
    var retryGate: Gate? {
        get { lock.withLock { retryWait } }
        set { lock.withLock { retryWait = newValue } }
    }

    func adapt(_ request: URLRequest, for operation: URLConnectionOperation) async throws -> URLRequest {
        let number = lock.withLock { () -> Int in
            calls += 1
            marks.append(request.value(forHTTPHeaderField: "X-Adapted"))
            return calls
        }
        if let gate {
            await gate.wait()
            if Task.isCancelled { lock.withLock { cancelled += 1 } }
        }
        defer { lock.withLock { returned += 1 } }
        if let failure { throw failure }
        var adapted = request
        adapted.setValue(String(number), forHTTPHeaderField: "X-Adapted")
        return adapted
    }

    func retry(_ operation: URLConnectionOperation, dueTo error: Error?, response: HTTPURLResponse?) async -> RetryDecision {
        let status = response?.statusCode ?? -1
        let (count, gate) = lock.withLock { () -> (Int, Gate?) in
            questions.append(status)
            return (questions.count, retryWait)
        }
        if let gate { await gate.wait() }
        guard count <= retryLimit else { return .doNotRetry }
        return retryStatuses[status] ?? .doNotRetry
    }
}

/// A gate tasks wait at until the test opens it (a continuation each, no thread held).
final class Gate: @unchecked Sendable {   // every stored var is guarded by lock
    private let lock = NSLock()
    private var isOpen = false                                 // guarded by lock
    private var waiters: [CheckedContinuation<Void, Never>] = []   // guarded by lock

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if isOpen { return true }
                waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func open() {
        let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            isOpen = true
            defer { waiters = [] }
            return waiters
        }
        for waiter in waiting { waiter.resume() }
    }

    var waiting: Int { lock.withLock { waiters.count } }
}

/// The attempts monitors hear of (`willRetryAfter`).
private final class RetryCounter: EventMonitor, @unchecked Sendable {   // every stored var is guarded by lock
    private let lock = NSLock()
    private var seen: [Int] = []   // guarded by lock
    var attempts: [Int] { lock.withLock { seen } }
    func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        lock.withLock { seen.append(attempt) }
    }
}

/// An adapt's error.
struct Refused: Error, Equatable {}
