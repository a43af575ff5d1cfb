import Dispatch
import Foundation

/// A `URLConnectionOperation` for HTTP and HTTPS that validates and serializes its response and
/// reports through success and failure blocks (AFNetworking's `AFHTTPRequestOperation`).
///
/// The response is serialized on a processing queue (neither the network thread nor the completion
/// queue); then `success` or `failure` runs on the completion queue inside the completion group, and
/// only after it returned does the operation turn finished — so an operation that depends on this
/// one starts after this one's handler ran.
/// - Threading: as `URLConnectionOperation`; the serializer, the handlers and the serialized result
///   are the operation's `state.handling` (`URLConnectionOperation.ResponseHandling`), under its one lock.
open class HTTPRequestOperation: URLConnectionOperation, @unchecked Sendable {
    /// Called with the operation and its serialized response object.
    public typealias Success = @Sendable (HTTPRequestOperation, Any?) -> Void
    /// Called with the operation and the transport, cancel, validation or serialization error.
    public typealias Failure = @Sendable (HTTPRequestOperation, Error) -> Void

    /// Creates an operation for `request`.
    public required init(request: URLRequest) {
        super.init(request: request)
    }

    /// The HTTP response, once its head arrived (AFN's `NSHTTPURLResponse`-typed `response`): the
    /// inherited `response` narrowed, so ported code reads `operation.response?.statusCode`.
    open override var response: HTTPURLResponse? { super.response as? HTTPURLResponse }

    /// Validates and decodes the response. Default `HTTPResponseSerializer()` (raw data, 2xx only);
    /// the manager sets its own. Setting it clears a computed `responseObject`.
    public var responseSerializer: HTTPResponseSerializer {
        get {
            if let serializer = state.withLock({ $0.handling.serializer }) { return serializer }
            let made = HTTPResponseSerializer()
            return state.withLock { state in
                if let serializer = state.handling.serializer { return serializer }
                state.handling.serializer = made
                return made
            }
        }
        set {
            state.withLock { state in
                state.handling.serializer = newValue
                state.handling.serialized = nil
            }
        }
    }

    /// The response serialized by `responseSerializer`, computed once after the transfer ended; a
    /// serialization or validation error becomes `error` (the object may still be set, e.g. the JSON
    /// body of a 404). `nil` before the end and after a transport error.
    public var responseObject: Any? {
        let ended = state.withLock { state -> (data: Data?, head: ResponseHead?, serialized: SerializedResponse?)? in
            guard state.lifecycle.hasEnded, state.run.error == nil else { return nil }
            return (state.run.responseData, state.run.head, state.handling.serialized)
        }
        guard let ended else { return nil }
        // Once serialized, the stored result (only a serializer that exists can have produced it).
        if let serialized = ended.serialized { return serialized.object }
        let serializer = responseSerializer
        var result: Any?
        var failure: Error?
        do {
            // The library's own serializers validate from the raw head when it passes, so a response
            // nobody reads never builds Foundation's HTTPURLResponse.
            if let head = ended.head, serializer.acceptsWithoutResponseObject(head, data: ended.data) {
                result = try serializer.decodedObject(from: ended.data, head: head)
            } else {
                result = try serializer.responseObject(for: response, data: ended.data)
            }
        } catch {
            failure = error
            result = (error as NSError).userInfo[ResponseObjectErrorKey]
        }
        // Stored unless another read (or a new serializer) came first.
        return state.withLock { state in
            guard state.handling.serializer === serializer else { return result }
            if state.handling.serialized == nil {
                state.handling.serialized = SerializedResponse(object: result, error: failure)
            }
            return state.handling.serialized?.object
        }
    }

    /// The serialization error if there was one, otherwise the transport error.
    open override var error: Error? {
        state.withLock { $0.handling.serialized?.error } ?? transportError
    }

    /// Sets the blocks run when the operation ends: exactly one of them, on the completion queue,
    /// inside the completion group, before the operation turns finished. A cancelled operation calls
    /// `failure` with `URLError(.cancelled)`. Calling it again replaces both.
    @preconcurrency
    public func setCompletionBlockWithSuccess(_ success: Success?, failure: Failure?) {
        state.withLock { $0.handling.handlers = ResponseHandlers(success: success, failure: failure) }
    }

    /// Archives everything `URLConnectionOperation` does, plus the response serializer.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(responseSerializer, forKey: OperationCodingKeys.responseSerializer)
    }

    /// Restores everything `URLConnectionOperation` does, plus the response serializer, with which a
    /// finished operation's response is serialized again; like it, changes nothing on an operation
    /// that started, paused or was cancelled.
    open override func restore(from coder: NSCoder) {
        let fresh = state.withLock { $0.lifecycle.acceptsArchivedState }
        super.restore(from: coder)
        guard fresh else { return }
        if let serializer = coder.decodeChecked(HTTPResponseSerializer.self, forKey: OperationCodingKeys.responseSerializer) {
            responseSerializer = serializer
        }
        // A finished operation had its response serialized before it was archived: a validation or
        // serialization failure is its `error` again, as it was (only the transport error is archived).
        if isFinished { _ = responseObject }
    }

    /// A copy also carries a copy of the response serializer.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        if let operation = copy as? HTTPRequestOperation,
           let serializer = responseSerializer.copy() as? HTTPResponseSerializer {
            operation.responseSerializer = serializer
        }
        return copy
    }

    // MARK: - The end (see `URLConnectionOperation.transferDidEnd`)

    /// Prepares on the delivery queue when that is quick: no handler to prepare for, a transport
    /// failure, or the raw-data serializer's status and content-type check on a body up to
    /// `inlinePreparationLimit`. Every other serializer — a decoder, a caller's subclass — takes a time
    /// the body or the caller decides, and the delivery queue is the one serial queue every transfer's
    /// end goes through: it runs on the concurrent processing queue, where it holds only its own operation.
    override func preparationQueue(onDeliveryQueue: Bool) -> DispatchQueue? {
        if let queue = super.preparationQueue(onDeliveryQueue: onDeliveryQueue) { return queue }
        let (hasHandlers, serializer, failed, size) = state.withLock {
            (!$0.handling.handlers.isEmpty, $0.handling.serializer, $0.run.error != nil, $0.run.responseData?.count ?? 0)
        }
        // No serializer yet means the default one, the raw-data serializer.
        let quick = failed || serializer.map { type(of: $0) == HTTPResponseSerializer.self } ?? true
        let inline = !hasHandlers || (onDeliveryQueue && size <= URLConnectionOperation.inlinePreparationLimit && quick)
        return inline ? nil : CallbackQueues.processing
    }

    /// Caches (`super`), then serializes once, off the completion queue, when a handler will read it.
    override func prepareHandlers() {
        super.prepareHandlers()
        if state.withLock({ !$0.handling.handlers.isEmpty }) { _ = responseObject }
    }

    /// Runs the success or the failure block: the ones set now, not at the transfer's end. Each is
    /// released once taken (AFN broke the cycles its blocks made this way).
    override func runHandlers() {
        let handlers = state.withLock { state in
            defer { state.handling.handlers = ResponseHandlers() }
            return state.handling.handlers
        }
        guard !handlers.isEmpty else { return }
        // Serialized before `error` is read, of which a validation failure is part (AFN 2.x reads
        // `error` after `responseObject`).
        let object = responseObject
        if let problem = error {
            handlers.failure?(self, problem)
        } else {
            handlers.success?(self, object)
        }
    }
}

extension URLConnectionOperation {
    /// The blocks `setCompletionBlockWithSuccess` set. A struct, not a tuple: closures in a tuple
    /// that passes through `withLock`'s generic result are each wrapped in a thunk, allocated.
    struct ResponseHandlers {
        var success: HTTPRequestOperation.Success?
        var failure: HTTPRequestOperation.Failure?
        var isEmpty: Bool { success == nil && failure == nil }
    }

    /// `HTTPRequestOperation`'s response handling: serializer, handlers and the serialized result. Kept
    /// in the operation's `State`, under its one lock (a queued operation carries one lock, not two).
    struct ResponseHandling {
        /// `nil` until set or first read, so an operation given a serializer (the manager's) never
        /// builds the default.
        var serializer: HTTPResponseSerializer?
        var handlers = ResponseHandlers()
        /// The serialized response, once `responseObject` computed it (once per serializer).
        var serialized: SerializedResponse?
    }

    /// What serializing the response gave: the object, and the validation or serialization error
    /// (the object may be set with it: the JSON body of a 404). Made once, never changed; boxed, so
    /// that a queued operation carries one empty reference.
    /// - Threading: immutable after init; kept in the operation's `state.handling`, under its lock, and
    ///   read from any thread.
    final class SerializedResponse {
        let object: Any?
        let error: Error?

        init(object: Any?, error: Error?) {
            self.object = object
            self.error = error
        }
    }
}
