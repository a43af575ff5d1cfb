import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - async/await (new, not in AFNetworking)

/// The async convenience methods. Each builds its operation through the per-method hook
/// `httpRequestOperation(withHTTPMethod:URLString:parameters:success:failure:)` — so a subclass that
/// signs requests there sees async calls too — enqueues it on `operationQueue` (its concurrency limit,
/// suspension and `cancelAllOperations()` apply) and awaits it with `HTTPRequestOperation.value()` or
/// `decode(_:decoder:)`. Cancelling the awaiting `Task` cancels the operation (`URLError(.cancelled)`).
/// A request that cannot be built throws the request serializer's error. They may be called from any
/// isolation (the main actor, an actor of your own); results are `sending`.
extension HTTPRequestOperationManager {
    /// `GET` with `parameters` in the query string; returns the response object (the response
    /// serializer's: parsed JSON by default).
    public func GET(_ URLString: String, parameters: Any? = nil) async throws -> sending Any? {
        try await enqueue("GET", URLString, parameters).value()
    }

    /// `GET`, the body decoded as `T` with `decoder` (default `JSONDecoder()`) after the response
    /// serializer's validation passed; see `HTTPRequestOperation.decode(_:decoder:)` for the errors.
    public func GET<T: Decodable & Sendable>(_ URLString: String, parameters: Any? = nil, as type: T.Type,
                                             decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await enqueue("GET", URLString, parameters).decode(type, decoder: decoder)
    }

    /// `HEAD`; returns the response (a failed validation, e.g. a 404, throws).
    public func HEAD(_ URLString: String, parameters: Any? = nil) async throws -> HTTPURLResponse {
        let operation = try await enqueue("HEAD", URLString, parameters)
        _ = try await operation.value()
        guard let response = operation.response else {
            throw TransportError.make(.badServerResponse, "The server sent no HTTP response.", url: operation.request.url)
        }
        return response
    }

    /// `POST` with `parameters` in the body (url-encoded by default); returns the response object.
    public func POST(_ URLString: String, parameters: Any? = nil) async throws -> sending Any? {
        try await enqueue("POST", URLString, parameters).value()
    }

    /// `POST`, the body decoded as `T` (see `GET(_:parameters:as:decoder:)`).
    public func POST<T: Decodable & Sendable>(_ URLString: String, parameters: Any? = nil, as type: T.Type,
                                              decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await enqueue("POST", URLString, parameters).decode(type, decoder: decoder)
    }

    /// `PUT` with `parameters` in the body; returns the response object.
    public func PUT(_ URLString: String, parameters: Any? = nil) async throws -> sending Any? {
        try await enqueue("PUT", URLString, parameters).value()
    }

    /// `PUT`, the body decoded as `T` (see `GET(_:parameters:as:decoder:)`).
    public func PUT<T: Decodable & Sendable>(_ URLString: String, parameters: Any? = nil, as type: T.Type,
                                             decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await enqueue("PUT", URLString, parameters).decode(type, decoder: decoder)
    }

    /// `PATCH` with `parameters` in the body; returns the response object.
    public func PATCH(_ URLString: String, parameters: Any? = nil) async throws -> sending Any? {
        try await enqueue("PATCH", URLString, parameters).value()
    }

    /// `PATCH`, the body decoded as `T` (see `GET(_:parameters:as:decoder:)`).
    public func PATCH<T: Decodable & Sendable>(_ URLString: String, parameters: Any? = nil, as type: T.Type,
                                               decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await enqueue("PATCH", URLString, parameters).decode(type, decoder: decoder)
    }

    /// `DELETE` with `parameters` in the query string; returns the response object.
    public func DELETE(_ URLString: String, parameters: Any? = nil) async throws -> sending Any? {
        try await enqueue("DELETE", URLString, parameters).value()
    }

    /// `DELETE`, the body decoded as `T` (see `GET(_:parameters:as:decoder:)`).
    public func DELETE<T: Decodable & Sendable>(_ URLString: String, parameters: Any? = nil, as type: T.Type,
                                                decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await enqueue("DELETE", URLString, parameters).decode(type, decoder: decoder)
    }

    /// Builds the operation through the per-method hook and adds it to `operationQueue`; throws the
    /// error the hook reports through `failure(nil, error)` when the request cannot be built.
    private func enqueue(_ method: String, _ URLString: String, _ parameters: Any?) async throws -> HTTPRequestOperation {
        let buildFailure = BuildFailure()
        // The failure block only listens for the build error: the operation's own outcome is read by
        // `value()`/`decode` once it finished.
        let operation = httpRequestOperation(withHTTPMethod: method, URLString: URLString, parameters: parameters,
                                             success: nil, failure: { operation, error in
            if operation == nil { buildFailure.report(error) }
        })
        guard let operation else { throw await buildFailure.error() }
        operation.adoptCurrentServiceContext(replacing: true)   // the awaiting task's context, wherever the hook made it
        operationQueue.addOperation(operation)
        return operation
    }
}

/// The error a request-building failure reports, asynchronously, through `failure(nil, error)`.
///
/// - Threading: owned by its `Protected` state; the continuation is resumed after its lock is released.
private final class BuildFailure: Sendable {
    private struct State {
        var reported: Error?
        var continuation: CheckedContinuation<Error, Never>?
    }

    private let state = Protected(State())

    /// Called by the failure block (on the manager's completion queue); the first report counts.
    func report(_ error: Error) {
        let waiting = state.withLock { state -> CheckedContinuation<Error, Never>? in
            guard state.reported == nil else { return nil }
            state.reported = error
            defer { state.continuation = nil }
            return state.continuation
        }
        waiting?.resume(returning: error)
    }

    /// The reported error, waiting for the report when it has not come yet.
    func error() async -> Error {
        await withCheckedContinuation { (continuation: CheckedContinuation<Error, Never>) in
            let early = state.withLock { state -> Error? in
                if let reported = state.reported { return reported }
                state.continuation = continuation
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }
    }
}
