import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tracing

// MARK: - Tracing (swift-distributed-tracing; new, not in AFNetworking)

extension URLConnectionOperation {
    /// The context the operation's span is a child of (swift-distributed-tracing's `ServiceContext`).
    /// Default: `ServiceContext.current` when the operation was made (`init`), replaced by the current
    /// one when a manager enqueues it, and taken from a task that awaits it (`value()`, `decode`) before
    /// it started when it has none: the caller's task-local context follows the operation onto the
    /// threads it runs on. Set it before
    /// the operation starts; later changes reach no span. Not archived; `copy()` keeps it unless the
    /// copy is made with a current context of its own.
    ///
    /// With a tracer bootstrapped (`InstrumentationSystem.bootstrap(_:)`), each operation is one span of
    /// kind `.client`, named after its method (`GET`; `HTTP` for a method OpenTelemetry does not name),
    /// child of this context (a root span when `nil`), from its start to its finish (across a pause and
    /// every retry; an operation cancelled before it started gets a span that starts and ends at its
    /// finish). It carries `MetricsEventMonitor`'s attributes, `url.full` (a user, a password and every
    /// query value replaced by `REDACTED`) and `http.request.resend_count` (retries and redirects, when
    /// any). The tracer's headers (W3C `traceparent` and `tracestate` for an OpenTelemetry tracer) go
    /// into every request the operation sends: each attempt, each redirect, each continuation after a
    /// pause; the operation's `request` and the redirect block do not show them. An error, or a status
    /// of 400 or more, sets the span's status to `.error` with `error.type` as its message and records
    /// the error as its domain and code (never its description, which may quote the URL). Without a
    /// tracer no span is made and no header added. Tracer calls run on the thread that starts,
    /// resumes or finishes the operation, with no lock of the operation held.
    public var serviceContext: ServiceContext? {
        get { state.withLock { $0.serviceContext } }
        set { state.withLock { $0.serviceContext = newValue } }
    }

    /// Applies `start()` or `resume()`: what may precede the run is made before the operation's lock is
    /// taken (the security policy's snapshot, the cache's decision, the span: each calls code with locks
    /// of its own, or the app's), then the event is applied and its action carried out.
    func startOrResume(_ event: (inout OperationState) -> OperationState.Action?) {
        let security = securitySnapshot()
        let cache = cacheLookup(security: security, for: event)
        let trace = prepareTrace(for: event)
        let (unused, step) = state.withLock { state in
            (state.install(trace), advance(&state, security: security, cache: cache, event))
        }
        perform(step)
        // Made for an operation that finished meanwhile (a `cancel()` won the race): ended, so no span stays open.
        unused?.end(facts: HTTPClientFacts.finished(self), error: error)
    }

    /// Takes `ServiceContext.current`, when there is one, as the context of an operation that has not
    /// started: a manager enqueues it (`replacing` the one it has), or a task awaits it (when it has
    /// none), where the caller's task-local context is visible.
    func adoptCurrentServiceContext(replacing: Bool) {
        guard let current = ServiceContext.current else { return }
        state.withLock { state in
            if !state.lifecycle.hasStarted && (replacing || state.serviceContext == nil) { state.serviceContext = current }
        }
    }

    /// The span for a `start()` or `resume()` about to be applied, made before the operation's lock is
    /// taken for it (the tracer is the app's code): when a tracer is bootstrapped, the event starts a
    /// transfer, and no span was claimed for the operation yet. Claimed under the lock first, so two
    /// events never make two spans.
    func prepareTrace(for event: (inout OperationState) -> OperationState.Action?) -> OperationTrace? {
        guard let tracer = OperationTrace.bootstrappedTracer else { return nil }
        let claimed = state.withLock { state -> (URLRequest, ServiceContext?)? in
            guard state.existingRun?.traceClaimed != true, state.lifecycle.startsTransfer(event) else { return nil }
            state.run.traceClaimed = true
            return (state.request, state.serviceContext)
        }
        guard let (request, context) = claimed else { return nil }
        return OperationTrace(tracer: tracer, request: request, context: context)
    }

    /// Ends the operation's span as it turns finished (on its completion queue, no lock held): the one
    /// `State.takeTraceEnding()` took, or, for an operation that never started, one that starts and
    /// ends here when a tracer is bootstrapped.
    func endTrace(_ ending: TraceEnding?) {
        switch ending {
        case .span(let trace):
            trace.end(facts: HTTPClientFacts.finished(self), error: error)
        case .neverStarted(let request, let context):
            guard let tracer = OperationTrace.bootstrappedTracer else { return }
            OperationTrace(tracer: tracer, request: request, context: context)
                .end(facts: HTTPClientFacts.finished(self), error: error)
        case nil:
            return
        }
    }
}

/// What the finish of an operation does with its span (`URLConnectionOperation.endTrace(_:)`).
enum TraceEnding {
    /// End this span, made when the operation started.
    case span(OperationTrace)
    /// The operation never started (cancelled first): a span for it is made and ended at once.
    case neverStarted(URLRequest, ServiceContext?)
}

extension URLConnectionOperation.State {
    /// Takes the span to end as the operation finishes (once: the span leaves the state); `nil` when
    /// the operation started without a tracer. Call inside `state.withLock`.
    mutating func takeTraceEnding() -> TraceEnding? {
        if let run = existingRun {
            if let trace = run.trace {
                run.trace = nil
                return .span(trace)
            }
            if run.traceClaimed || run.startedAt != nil { return nil }
        }
        return .neverStarted(request, serviceContext)
    }

    /// Keeps the span `prepareTrace(for:)` made for the run; returns it when the operation already
    /// finished (it is ended then, by the caller). Call inside `state.withLock`.
    mutating func install(_ trace: OperationTrace?) -> OperationTrace? {
        guard let trace else { return nil }
        guard !lifecycle.isFinished, run.trace == nil else { return trace }
        run.trace = trace
        return nil
    }

    /// The header fields of the operation's span, set on a request it is about to send.
    func applyTraceFields(to request: inout URLRequest) {
        existingRun?.trace?.apply(to: &request)
    }
}

extension OperationState {
    /// Whether `event` puts a transfer on the network thread (or answers from the cache): asks the
    /// event itself, on a copy, as `startsRunFromNothing(_:)` does.
    func startsTransfer(_ event: (inout OperationState) -> Action?) -> Bool {
        var copy = self
        if case .startTransfer? = event(&copy) { return true }
        return false
    }
}

/// One operation's span and the header fields its tracer injected for it, the same for every request
/// the operation sends.
/// - Threading: immutable after init; the span is the tracer's (`Sendable`), used from the threads that
///   start and finish the operation.
final class OperationTrace: Sendable {
    let span: any Span
    /// The fields `inject` gave (`traceparent`, `tracestate`…), set on each request the operation sends.
    let fields: [(name: String, value: String)]

    /// The tracer bootstrapped in `InstrumentationSystem`, `nil` when there is none: without one, a
    /// read of the instrument and a type check, and no span, header or attribute is made.
    static var bootstrappedTracer: (any Tracer)? {
        if InstrumentationSystem.instrument is NoOpInstrument { return nil }
        let tracer = InstrumentationSystem.tracer
        return tracer is NoOpTracer ? nil : tracer
    }

    /// Starts the span of an operation sending `request`, child of `context`, and injects its headers.
    init(tracer: any Tracer, request: URLRequest, context: ServiceContext?) {
        let facts = HTTPClientFacts(request: request)
        let span = tracer.startSpan(facts.method == "_OTHER" ? "HTTP" : facts.method, context: context ?? .topLevel,
                                    ofKind: .client)
        span.updateAttributes { attributes in
            attributes[HTTPClientFacts.Name.method] = facts.method
            if let address = facts.serverAddress { attributes[HTTPClientFacts.Name.serverAddress] = address }
            if let port = facts.serverPort { attributes[HTTPClientFacts.Name.serverPort] = port }
            if let scheme = facts.scheme { attributes[HTTPClientFacts.Name.scheme] = scheme }
            if let url = request.url { attributes[HTTPClientFacts.Name.fullURL] = URLRedaction.tracedURL(url) }
        }
        var carrier = HeaderCarrier()
        tracer.inject(span.context, into: &carrier, using: HeaderInjector())
        self.span = span
        fields = carrier.fields
    }

    /// Sets what the finished operation was, marks a failure, and ends the span.
    func end(facts: HTTPClientFacts, error: Error?) {
        span.updateAttributes { attributes in
            if let status = facts.statusCode { attributes[HTTPClientFacts.Name.statusCode] = status }
            if let version = facts.protocolVersion { attributes[HTTPClientFacts.Name.protocolVersion] = version }
            if let type = facts.errorType { attributes[HTTPClientFacts.Name.errorType] = type }
            attributes[HTTPClientFacts.Name.cacheStatus] = facts.cacheStatus.rawValue
            if facts.resendCount > 0 { attributes[HTTPClientFacts.Name.resendCount] = facts.resendCount }
        }
        if let type = facts.errorType {
            span.setStatus(SpanStatus(code: .error, message: type))
            if let error { span.recordError(TracedError(error)) }
        }
        span.end()
    }

    /// Sets the fields on `request` (a request the operation is about to send).
    func apply(to request: inout URLRequest) {
        for field in fields { request.setValue(field.value, forHTTPHeaderField: field.name) }
    }
}

/// Where `inject` writes: the fields in the order the tracer gave them.
struct HeaderCarrier: Sendable {
    var fields: [(name: String, value: String)] = []
}

/// Writes each value the tracer injects as a header field (a later value for the same name replaces it).
struct HeaderInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HeaderCarrier) {
        carrier.fields.removeAll { $0.name.caseInsensitiveCompare(key) == .orderedSame }
        carrier.fields.append((key, value))
    }
}

/// The error a span records: its domain and code only. An error's description, and the URL in its
/// `userInfo`, may carry the query string or a user's name, which no tracing backend should receive.
/// - Threading: an immutable value.
struct TracedError: Error, CustomStringConvertible, Sendable {
    let domain: String
    let code: Int

    init(_ error: Error) {
        let error = error as NSError
        domain = error.domain
        code = error.code
    }

    var description: String { "\(domain) \(code)" }
}
