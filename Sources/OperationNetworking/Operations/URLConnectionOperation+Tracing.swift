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
    /// threads it runs on. Set it before the operation starts; later changes reach no span. Not
    /// archived; `copy()` keeps it unless the copy is made with a current context of its own.
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
        var cache = cacheLookup(security: security, for: event)
        let made = prepareTrace(for: event)
        var applied = apply(event, security: security, cache: cache, trace: made?.trace)
        while applied == nil {
            cache = cacheLookup(security: security, for: event)
            applied = apply(event, security: security, cache: cache, trace: made?.trace)
        }
        made?.signal.settle()
        perform(applied?.step)
        // Made for an operation that ended meanwhile (a `cancel()` won the race): ended, so no span stays open.
        applied?.unused?.end(facts: HTTPClientFacts.finished(self), error: error)
    }

    /// Applies `start()` or `resume()` under the operation's lock with what was made before it: the
    /// cache's lookup and the span (`trace`, installed here). Returns the step to carry out, and a span
    /// made for nothing. `nil`, changing nothing, when the event now starts a run from nothing although
    /// the lookup found it would not: another thread's `resume()` came between them (an operation paused
    /// before the queue's start reached it, then resumed). That run would otherwise go without the cache:
    /// not answered from it, nothing stored, and an unsafe request invalidating nothing. The caller looks
    /// up again and applies the event again.
    func apply(_ event: (inout OperationState) -> OperationState.Action?, security: SecurityPolicy.Snapshot?,
               cache: CacheLookup?, trace: OperationTrace?) -> (unused: OperationTrace?, step: Step?)? {
        state.withLock { state in
            if cache == nil, state.request.url != nil, state.lifecycle.startsRunFromNothing(event) { return nil }
            if trace != nil { state.run.traceBeingMade = nil }
            return (state.install(trace), advance(&state, security: security, cache: cache, event))
        }
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
    /// events never make two spans; its `signal` is settled once it is installed. An event of another
    /// thread that would start a transfer while the span is being made waits for it here, outside every
    /// lock (for as long as the tracer takes to start a span, at most 5 s), so that no request of the
    /// operation goes without the span's fields.
    func prepareTrace(for event: (inout OperationState) -> OperationState.Action?)
        -> (trace: OperationTrace, signal: OneTimeSignal)? {
        guard let tracer = OperationTrace.bootstrappedTracer else { return nil }
        enum Claim {
            case make(URLRequest, ServiceContext?, OneTimeSignal)
            case wait(OneTimeSignal)
        }
        let claim = state.withLock { state -> Claim? in
            guard state.lifecycle.startsTransfer(event) else { return nil }
            if let run = state.existingRun, run.traceClaimed {
                return run.trace == nil ? run.traceBeingMade.map { .wait($0) } : nil
            }
            let signal = OneTimeSignal()
            state.run.traceClaimed = true
            state.run.traceBeingMade = signal
            return .make(state.request, state.serviceContext, signal)
        }
        switch claim {
        case .make(let request, let context, let signal)?:
            return (OperationTrace(tracer: tracer, request: request, context: context), signal)
        case .wait(let signal)?:
            _ = signal.wait(until: .now() + 5)
            return nil
        case nil:
            return nil
        }
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
/// - Threading: an immutable value, taken under the operation's lock and carried out after it.
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

    /// Keeps the span `prepareTrace(for:)` made for the run; returns it when the operation's end came
    /// first (a `cancel()` won the race, and its finish may have looked for a span already): the caller
    /// ends it then. Call inside `state.withLock`.
    mutating func install(_ trace: OperationTrace?) -> OperationTrace? {
        guard let trace else { return nil }
        guard !lifecycle.hasEnded, run.trace == nil else { return trace }
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
