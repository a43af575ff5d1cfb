import Foundation
@testable import OperationNetworking
import Tracing

/// Which span a `ServiceContext` belongs to, for the recording tracer.
struct RecordedSpanID: Sendable, Hashable {
    let traceID: String
    let spanID: String

    /// The W3C `traceparent` value naming this span.
    var traceparent: String { "00-\(traceID)-\(spanID)-01" }
}

/// The recording tracer's key in a `ServiceContext`.
enum RecordedSpanKey: ServiceContextKey {
    typealias Value = RecordedSpanID
}

/// A tracer that keeps every span it made, counts each span's `end()` calls, and injects W3C
/// `traceparent` and `tracestate` fields, so tests can see spans, their parents and the fields on the
/// wire. swift-distributed-tracing's `InMemoryTracer` ignores a second `end()` (a double end would
/// pass unseen) and injects fields of its own naming instead of W3C's.
/// - Threading: its spans live in a `Recorder`; any thread.
final class RecordingTracer: Tracer, Sendable {
    typealias Span = RecordingSpan

    /// The one tracer of the test process, bootstrapped on first use (`InstrumentationSystem` takes one
    /// bootstrap per process; the tests of a class share it and clear it in `setUp`).
    static let shared: RecordingTracer = {
        let tracer = RecordingTracer()
        InstrumentationSystem.bootstrap(tracer)
        return tracer
    }()

    private let started = Recorder<RecordingSpan>()
    private let counter = Protected(0)
    /// The spans the tracer made since `clear()`, in order.
    var spans: [RecordingSpan] { started.all.filter { !$0.cleared } }

    /// Forgets the spans made so far (they stay alive, but no longer show in `spans`).
    func clear() {
        for span in started.all { span.cleared = true }
    }

    /// The span of `context` among those made.
    func span(of context: ServiceContext) -> RecordingSpan? {
        guard let id = context[RecordedSpanKey.self] else { return nil }
        return spans.first { $0.id == id }
    }

    private func nextHex(width: Int) -> String {
        let value = counter.withLock { counter -> Int in
            counter += 1
            return counter
        }
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    func startSpan<Instant: TracerInstant>(_ operationName: String, context: @autoclosure () -> ServiceContext,
                                           ofKind kind: SpanKind, at instant: @autoclosure () -> Instant,
                                           function: String, file fileID: String, line: UInt) -> RecordingSpan {
        let parent = context()
        let parentID = parent[RecordedSpanKey.self]
        let id = RecordedSpanID(traceID: parentID?.traceID ?? nextHex(width: 32), spanID: nextHex(width: 16))
        var own = parent
        own[RecordedSpanKey.self] = id
        let span = RecordingSpan(operationName: operationName, kind: kind, id: id, parent: parentID, context: own)
        started.append(span)
        return span
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let id = context[RecordedSpanKey.self] else { return }
        injector.inject(id.traceparent, forKey: "traceparent", into: &carrier)
        injector.inject("onet=test", forKey: "tracestate", into: &carrier)
    }

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}
}

/// One span of the recording tracer: what was set on it and how often it was ended.
/// - Threading: its mutable parts are owned by one `Protected`; any thread.
final class RecordingSpan: Tracing.Span, Sendable {
    let kind: SpanKind
    let id: RecordedSpanID
    let parent: RecordedSpanID?
    let context: ServiceContext
    private let state: Protected<RecordingSpanStateBox>

    init(operationName: String, kind: SpanKind, id: RecordedSpanID, parent: RecordedSpanID?, context: ServiceContext) {
        self.kind = kind
        self.id = id
        self.parent = parent
        self.context = context
        state = Protected(RecordingSpanStateBox(operationName: operationName))
    }

    var operationName: String {
        get { state.withLock { $0.operationName } }
        set { state.withLock { $0.operationName = newValue } }
    }

    var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set { state.withLock { $0.attributes = newValue } }
    }

    var status: SpanStatus? { state.withLock { $0.status } }
    var errors: [Error] { state.withLock { $0.errors.map(\.error) } }
    /// How many times `end()` was called.
    var endCount: Int { state.withLock { $0.endCount } }
    var isRecording: Bool { state.withLock { $0.endCount == 0 } }
    var cleared: Bool {
        get { state.withLock { $0.cleared } }
        set { state.withLock { $0.cleared = newValue } }
    }

    /// The attribute `name` as text (strings as they are, numbers in decimal), `nil` when unset.
    func attribute(_ name: String) -> String? {
        switch attributes.get(name) {
        case .string(let value)?: return value
        case .int64(let value)?: return String(value)
        case .int32(let value)?: return String(value)
        case nil: return nil
        default: return attributes.get(name).map { "\($0)" }
        }
    }

    func setStatus(_ status: SpanStatus) { state.withLock { $0.status = status } }
    func addEvent(_ event: SpanEvent) {}
    func recordError<Instant: TracerInstant>(_ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        state.withLock { $0.errors.append(SendableError(error)) }
    }
    func addLink(_ link: SpanLink) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        state.withLock { $0.endCount += 1 }
    }
}

/// `RecordingSpan`'s mutable parts.
struct RecordingSpanStateBox: @unchecked Sendable {   // only reached inside its span's `Protected`
    var operationName: String
    var attributes: SpanAttributes = [:]
    var status: SpanStatus?
    var errors: [SendableError] = []
    var endCount = 0
    var cleared = false
}

/// An error kept by a span.
struct SendableError: @unchecked Sendable {   // immutable; the errors recorded are values
    let error: Error
    init(_ error: Error) { self.error = error }
}
