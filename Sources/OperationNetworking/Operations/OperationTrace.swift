import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Tracing

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
/// - Threading: a value.
struct HeaderCarrier: Sendable {
    var fields: [(name: String, value: String)] = []
}

/// Writes each value the tracer injects as a header field (a later value for the same name replaces it).
/// - Threading: stateless.
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
