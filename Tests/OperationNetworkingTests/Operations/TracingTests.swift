import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import Tracing
import XCTest

/// Tracing: with a tracer bootstrapped, one client span per operation, child of the context current
/// where the operation was made, its fields on every request that goes over the wire.
final class TracingTests: CacheTestCase {
    private var tracer: RecordingTracer { RecordingTracer.shared }

    override func setUpWithError() throws {
        try super.setUpWithError()
        tracer.clear()
    }

    /// A context holding a span of the test's own, for operations to be children of.
    private func parentContext(_ name: String = "parent") -> (ServiceContext, RecordingSpan) {
        let parent = tracer.startSpan(name, context: .topLevel, ofKind: .server)
        return (parent.context, parent)
    }

    /// The client spans made since `setUp`.
    private var clientSpans: [RecordingSpan] { tracer.spans.filter { $0.kind == .client } }

    /// The only client span, checked to be ended exactly once.
    private func onlySpan(file: StaticString = #filePath, line: UInt = #line) throws -> RecordingSpan {
        let spans = clientSpans
        XCTAssertEqual(spans.count, 1, "one span per operation", file: file, line: line)
        let span = try XCTUnwrap(spans.first, file: file, line: line)
        XCTAssertEqual(span.endCount, 1, "ended exactly once", file: file, line: line)
        return span
    }

    /// Runs `operation` and waits until it turned finished (its span ended before that).
    @discardableResult
    private func runToFinish(_ operation: HTTPRequestOperation) -> Outcome {
        let outcome = run(operation)
        XCTAssertTrue(eventually { operation.isFinished })
        return outcome
    }

    func testOneClientSpanChildOfTheContextWhereTheOperationWasMade() throws {
        let (context, parent) = parentContext()
        var url = URLComponents(url: server.url("/echo?token=SECRET-QUERY&flag"), resolvingAgainstBaseURL: false)!
        url.user = "ada"
        url.password = "SECRET-PASSWORD"
        var request = URLRequest(url: try XCTUnwrap(url.url))
        request.setValue("Bearer SECRET-AUTHORIZATION", forHTTPHeaderField: "Authorization")
        request.setValue("session=SECRET-COOKIE", forHTTPHeaderField: "Cookie")
        let operation = ServiceContext.withValue(context) { HTTPRequestOperation(request: request) }
        XCTAssertNotNil(operation.serviceContext?[RecordedSpanKey.self])
        XCTAssertTrue(runToFinish(operation).isSuccess)

        let span = try onlySpan()
        XCTAssertEqual(span.operationName, "GET")
        XCTAssertEqual(span.parent, parent.id)
        XCTAssertEqual(span.id.traceID, parent.id.traceID)
        XCTAssertNil(span.status, "a success leaves the status unset")
        XCTAssertEqual(span.attribute("http.request.method"), "GET")
        XCTAssertEqual(span.attribute("http.response.status_code"), "200")
        XCTAssertEqual(span.attribute("server.address"), "127.0.0.1")
        XCTAssertEqual(span.attribute("server.port"), "\(server.port)")
        XCTAssertEqual(span.attribute("url.scheme"), "http")
        XCTAssertEqual(span.attribute("network.protocol.version"), "1.1")
        XCTAssertEqual(span.attribute("onet.cache.status"), "miss", "the process's cache stores nothing")
        XCTAssertEqual(span.attribute("url.full"),
                       "http://REDACTED:REDACTED@127.0.0.1:\(server.port)/echo?token=REDACTED&flag")
        XCTAssertNil(span.attribute("http.request.resend_count"), "sent once")
        span.attributes.forEach { name, value in
            XCTAssertFalse("\(value)".contains("SECRET"), "\(name) carries a secret: \(value)")
        }

        let sent = try XCTUnwrap(server.requests.first)
        XCTAssertEqual(sent.header("traceparent"), span.id.traceparent, "the span's own id goes over the wire")
        XCTAssertEqual(sent.header("tracestate"), "onet=test")
        XCTAssertNil(operation.request.value(forHTTPHeaderField: "traceparent"), "the caller's request is left as it was")
    }

    func testTheContextOfATaskAndOfTheManagersMethodsIsTheParent() async throws {
        let (taskContext, taskParent) = parentContext("task")
        let server = self.server!
        let made = await Task {
            ServiceContext.withValue(taskContext) { HTTPRequestOperation(request: URLRequest(url: server.url("/echo"))) }
        }.value
        made.start()
        _ = try await withTimeout { try await SendableAny(made.value()) }

        let manager = HTTPRequestOperationManager(baseURL: server.url("/"))
        manager.responseSerializer = HTTPResponseSerializer()
        let (asyncContext, asyncParent) = parentContext("async")
        _ = try await withTimeout {
            try await ServiceContext.withValue(asyncContext) { try await SendableAny(manager.GET("echo?via=async")) }
        }
        let (blockContext, blockParent) = parentContext("blocks")
        // Waited for by its finish (its handlers run before it): XCTest's own async wait leaves a weak
        // reference LeakSanitizer reports.
        let operation = ServiceContext.withValue(blockContext) {
            manager.GET("echo?via=blocks", parameters: nil, success: { _, _ in }, failure: { _, _ in })
        }
        let finished = await eventuallyAsync { operation?.isFinished == true }
        XCTAssertTrue(finished)

        let spans = clientSpans
        XCTAssertEqual(spans.count, 3)
        XCTAssertEqual(spans.map(\.parent), [taskParent.id, asyncParent.id, blockParent.id])
        XCTAssertEqual(spans.map(\.endCount), [1, 1, 1])
        XCTAssertEqual(server.requests.map { $0.header("traceparent") }, spans.map(\.id.traceparent))
    }

    /// An operation made outside any context takes the one of the task that awaits it before it
    /// started; a manager's enqueue gives its operation the context current there, whatever the
    /// operation had.
    func testAnAwaitingTaskAndAManagersEnqueueGiveTheirContext() async throws {
        let made = HTTPRequestOperation(request: URLRequest(url: server.url("/echo?awaited")))
        XCTAssertNil(made.serviceContext)
        let (awaitingContext, awaitingParent) = parentContext("awaiting")
        let queue = OperationQueue()
        queue.isSuspended = true
        queue.addOperation(made)
        let awaited = Task { try await ServiceContext.withValue(awaitingContext) { try await SendableAny(made.value()) } }
        let adopted = await eventuallyAsync { made.serviceContext?[RecordedSpanKey.self] != nil }
        XCTAssertTrue(adopted)
        queue.isSuspended = false
        _ = try await withTimeout { try await awaited.value }

        let manager = ContextReplacingManager(baseURL: server.url("/"))
        manager.responseSerializer = HTTPResponseSerializer()
        let (enqueueContext, enqueueParent) = parentContext("enqueue")
        _ = try await withTimeout {
            try await ServiceContext.withValue(enqueueContext) { try await SendableAny(manager.GET("echo?enqueued")) }
        }
        let operation = ServiceContext.withValue(enqueueContext) {
            manager.GET("echo?blocks", parameters: nil, success: { _, _ in }, failure: { _, _ in })
        }
        let finished = await eventuallyAsync { operation?.isFinished == true }
        XCTAssertTrue(finished)
        XCTAssertEqual(clientSpans.map(\.parent), [awaitingParent.id, enqueueParent.id, enqueueParent.id])
        XCTAssertEqual(clientSpans.map(\.endCount), [1, 1, 1])
    }

    /// The README's example: inside `withSpan`, a manager's request is that span's child.
    func testARequestInsideWithSpanIsItsChild() async throws {
        let manager = HTTPRequestOperationManager(baseURL: server.url("/"))
        manager.responseSerializer = HTTPResponseSerializer()
        try await withSpan("checkout") { _ in
            _ = try await manager.GET("echo")
        }
        let checkout = try XCTUnwrap(tracer.spans.first { $0.operationName == "checkout" })
        let span = try onlySpan()
        XCTAssertEqual(span.parent, checkout.id)
        XCTAssertEqual(server.requests.map { $0.header("traceparent") }, [span.id.traceparent])
    }

    func testEveryAttemptAndEveryRedirectCarriesTheSpansFields() throws {
        let retried = HTTPRequestOperation(request: request("/flaky/2/\(UUID().uuidString)"))
        retried.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01, maxDelay: 1)
        XCTAssertTrue(runToFinish(retried).isSuccess)
        let span = try onlySpan()
        XCTAssertEqual(server.requests.count, 3, "two 503s, then the 200")
        XCTAssertEqual(server.requests.map { $0.header("traceparent") }, Array(repeating: span.id.traceparent, count: 3))
        XCTAssertEqual(span.attribute("http.request.resend_count"), "2")
        XCTAssertEqual(span.attribute("http.response.status_code"), "200")
        XCTAssertNil(span.status)

        tracer.clear()
        server.clearLog()
        let redirected = HTTPRequestOperation(request: request("/redirect/2"))
        let proposals = Recorder<String?>()
        redirected.setRedirectResponseBlock { _, request, _ in
            proposals.append(request.value(forHTTPHeaderField: "traceparent"))
            var changed = request
            changed.setValue(nil, forHTTPHeaderField: "traceparent")   // the next hop sends it all the same
            return changed
        }
        XCTAssertTrue(runToFinish(redirected).isSuccess)
        let followed = try onlySpan()
        XCTAssertEqual(server.requests.count, 3)
        XCTAssertEqual(server.requests.map { $0.header("traceparent") }, Array(repeating: followed.id.traceparent, count: 3))
        XCTAssertEqual(proposals.all, [nil, nil], "the redirect block sees the request without the span's fields")
        XCTAssertEqual(followed.attribute("http.request.resend_count"), "2")
    }

    /// With a `RequestInterceptor`, every attempt is adapted and then given the span's fields.
    func testAnInterceptedOperationsAttemptsCarryTheSpansFields() throws {
        let operation = HTTPRequestOperation(request: request("/flaky/1/\(UUID().uuidString)"))
        operation.retryPolicy = RetryPolicy(maxAttempts: 2, baseDelay: 0.01, maxDelay: 1)
        operation.interceptor = TestInterceptor()
        XCTAssertTrue(runToFinish(operation).isSuccess)
        let span = try onlySpan()
        XCTAssertEqual(server.requests.map { $0.header("X-Adapted") }, ["1", "2"])
        XCTAssertEqual(server.requests.map { $0.header("traceparent") }, [span.id.traceparent, span.id.traceparent])
    }

    func testAnErrorOrAStatusOf400OrMoreMarksTheSpan() throws {
        XCTAssertNotNil(runToFinish(HTTPRequestOperation(request: request("/status/404"))).error)
        let notFound = try onlySpan()
        XCTAssertEqual(notFound.status, SpanStatus(code: .error, message: "404"))
        XCTAssertEqual(notFound.attribute("error.type"), "404")
        XCTAssertEqual(notFound.attribute("http.response.status_code"), "404")
        XCTAssertEqual(notFound.errors.map { "\($0)" }, ["\(ResponseSerializationErrorDomain) \(NSURLErrorBadServerResponse)"])

        tracer.clear()
        var refused = URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:1/secret-path?q=SECRET")))
        refused.timeoutInterval = 5
        XCTAssertEqual(runToFinish(HTTPRequestOperation(request: refused)).urlErrorCode, .cannotConnectToHost)
        let failed = try onlySpan()
        XCTAssertEqual(failed.status, SpanStatus(code: .error, message: "cannotConnectToHost"))
        XCTAssertEqual(failed.attribute("error.type"), "cannotConnectToHost")
        XCTAssertNil(failed.attribute("http.response.status_code"))
        let recorded = failed.errors.map { "\($0)" }
        XCTAssertEqual(recorded, ["\(NSURLErrorDomain) \(URLError.cannotConnectToHost.rawValue)"])
        XCTAssertFalse(recorded.joined().contains("SECRET"), "the recorded error never quotes the URL")
    }

    func testAnOperationCancelledBeforeItStartedEndsOneSpanAndSendsNothing() throws {
        let (context, parent) = parentContext()
        let operation = ServiceContext.withValue(context) { HTTPRequestOperation(request: request("/echo")) }
        operation.cancel()
        XCTAssertEqual(runToFinish(operation).urlErrorCode, .cancelled)
        let span = try onlySpan()
        XCTAssertEqual(span.parent, parent.id)
        XCTAssertEqual(span.attribute("error.type"), "cancelled")
        XCTAssertEqual(span.status?.code, .error)
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testAPausedAndResumedOperationIsOneSpanAcrossBothRequests() throws {
        let operation = HTTPRequestOperation(request: request("/bytes/300000?chunkSize=10000&chunkDelayMs=20"))
        let (done, box) = startAndPause(operation)
        // Settled, so that the resume starts the continuation itself.
        XCTAssertTrue(eventually {
            if case .paused = operation.state.withLock({ $0.lifecycle.phase }) { return true }
            return false
        })
        XCTAssertEqual(clientSpans.map(\.endCount), [0], "a pause does not end the span")
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertTrue(eventually { operation.isFinished })
        let span = try onlySpan()
        let sent = server.requests
        XCTAssertEqual(sent.count, 2)
        XCTAssertNotNil(sent.last?.header("Range"), "the continuation")
        XCTAssertEqual(sent.map { $0.header("traceparent") }, [span.id.traceparent, span.id.traceparent])
    }

    /// Pauses, resumes and cancels from several threads at once, before and during the transfers: every
    /// operation still ends as exactly one span, ended once.
    func testRacingPausesResumesAndCancelsEndEverySpanOnce() throws {
        let operations = (0..<24).map { index in
            HTTPRequestOperation(request: request("/bytes/60000?chunkSize=6000&chunkDelayMs=10&n=\(index)"))
        }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 6
        queue.addOperations(operations, waitUntilFinished: false)
        let all = operations
        // A round while most have not started, another once some are under way.
        for round in 0..<2 {
            if round == 1 { XCTAssertTrue(eventually { all.contains(where: \.isExecuting) || all.allSatisfy(\.isFinished) }) }
            DispatchQueue.concurrentPerform(iterations: 3) { thread in
                var random = SystemRandomNumberGenerator()
                for step in 0..<40 {
                    let operation = all[(thread * 7 + step * 5 + round) % all.count]
                    switch Int.random(in: 0..<6, using: &random) {
                    case 0, 1: operation.pause()
                    case 2, 3, 4: operation.resume()
                    default: if step % 4 == 0 { operation.cancel() }
                    }
                }
            }
        }
        XCTAssertTrue(eventually(timeout: 20) {
            for operation in all where operation.isPaused { operation.resume() }
            return all.allSatisfy(\.isFinished)
        })
        let spans = clientSpans
        XCTAssertEqual(spans.count, operations.count, "one span per operation")
        XCTAssertEqual(spans.filter { $0.endCount != 1 }.map(\.endCount), [], "each ended exactly once")
        let sent = Set(server.requests.compactMap { $0.header("traceparent") })
        XCTAssertTrue(sent.isSubset(of: Set(spans.map(\.id.traceparent))), "every request carries its operation's span")
        XCTAssertEqual(server.requests.filter { $0.header("traceparent") == nil }.count, 0)
    }

    func testACacheHitIsOneSpanAndNoRequest() throws {
        let path = "/cache/traced?cc=max-age%3D600"
        fetch(path)
        tracer.clear()
        let hit = fetch(path)
        XCTAssertTrue(eventually { hit.isFinished })
        XCTAssertEqual(server.requests.count, 1, "the hit made no request")
        let span = try onlySpan()
        XCTAssertEqual(span.attribute("onet.cache.status"), "hit")
        XCTAssertEqual(span.attribute("http.response.status_code"), "200")
        XCTAssertNil(span.status)
    }
}

/// A manager whose hook hands over operations with another context than the caller's (as one that
/// builds them ahead of time, in another task, would).
private final class ContextReplacingManager: HTTPRequestOperationManager, @unchecked Sendable {   // no state of its own
    override func httpRequestOperation(with request: URLRequest, success: Success?,
                                       failure: (@Sendable (HTTPRequestOperation, Error) -> Void)?) -> HTTPRequestOperation {
        let operation = super.httpRequestOperation(with: request, success: success, failure: failure)
        var elsewhere = ServiceContext.topLevel
        elsewhere[RecordedSpanKey.self] = RecordedSpanID(traceID: String(repeating: "e", count: 32),
                                                         spanID: String(repeating: "e", count: 16))
        operation.serviceContext = elsewhere
        return operation
    }
}
