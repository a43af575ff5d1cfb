import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import Tracing
import XCTest

/// Without a tracer bootstrapped (the default), an operation makes no span and sends no tracing
/// field, even with a context; its `serviceContext` is still the one current where it was made.
final class TracingWithoutTracerTests: ServerTestCase {
    /// A context as a program without a tracer might carry one (a key of its own).
    private enum RequestIDKey: ServiceContextKey {
        typealias Value = String
    }

    func testNoSpanNoFieldAndTheContextKept() throws {
        // Each class runs in a process of its own (scripts/test); a run that put TracingTests first in
        // this process has bootstrapped its tracer, and this check has nothing to say.
        guard InstrumentationSystem.tracer is NoOpTracer else {
            throw XCTSkip("a tracer is bootstrapped in this process (run this class on its own)")
        }
        XCTAssertNil(OperationTrace.bootstrappedTracer)
        var context = ServiceContext.topLevel
        context[RequestIDKey.self] = "request-1"
        var request = request("/echo")
        request.setValue("caller's own", forHTTPHeaderField: "tracestate")
        let operation = ServiceContext.withValue(context) { HTTPRequestOperation(request: request) }
        XCTAssertEqual(operation.serviceContext?[RequestIDKey.self], "request-1")
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertTrue(eventually { operation.isFinished })

        let sent = try XCTUnwrap(server.requests.first)
        XCTAssertNil(sent.header("traceparent"))
        XCTAssertEqual(sent.header("tracestate"), "caller's own", "a caller's field is sent as it was")
        let (trace, claimed) = operation.state.withLock { ($0.existingRun?.trace, $0.existingRun?.traceClaimed) }
        XCTAssertNil(trace)
        XCTAssertEqual(claimed, false, "no span was set out to be made")
    }
}
