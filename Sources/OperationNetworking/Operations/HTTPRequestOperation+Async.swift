import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - async/await (new, not in AFNetworking)

extension HTTPRequestOperation {
    /// Waits until the operation finished — its success/failure blocks, when set, already ran — and
    /// returns `responseObject`, or throws `error` (transport, cancel, validation or serialization).
    ///
    /// It does not start the operation: enqueue it (or call `start()`) yourself; awaiting an operation
    /// that is never started waits forever. Awaiting one that already finished returns at once, and
    /// any number of tasks may await the same operation.
    ///
    /// Cancelling the awaiting `Task` cancels the operation, and this throws `URLError(.cancelled)`:
    /// once the operation finished when it was running, at once when it had not started yet (sitting
    /// in a suspended or busy queue; its failure block still runs when its queue starts it).
    /// - Returns: the response object; `sending`, so an actor or the main actor takes it without a
    ///   Sendable check (the serializers' objects are value-like: `Data`, JSON containers, strings).
    public func value() async throws -> sending Any? {
        try await waitForFinish()
        let object = responseObject   // serializes once; a serialization error becomes `error`
        if let error { throw error }
        return object
    }

    /// Waits like `value()`, then decodes `responseData` as `T` with `decoder` (default: a new
    /// `JSONDecoder()`), after the response serializer's validation (status code, content type) passed.
    ///
    /// `T` is `Sendable`: it is decoded off the caller's actor and handed back to it.
    /// - Throws: the transport or cancel error; the serializer's validation error; on a decoding
    ///   failure an `NSError` in `ResponseSerializationErrorDomain` with code
    ///   `NSURLErrorCannotDecodeContentData`, the `DecodingError` under `NSUnderlyingErrorKey`, the body
    ///   under `FailingURLResponseDataErrorKey` and the response under `FailingURLResponseErrorKey`.
    public func decode<T: Decodable & Sendable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) async throws -> T {
        try await waitForFinish()
        if let failure = transportError { throw failure }
        let data = responseData ?? Data()
        let response = self.response
        try responseSerializer.validate(response, data: data)
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw HTTPRequestOperation.decodingFailure(error, data: data, response: response, url: request.url)
        }
    }

    /// The error `decode(_:decoder:)` throws when the body does not decode.
    private static func decodingFailure(_ error: Error, data: Data, response: HTTPURLResponse?, url: URL?) -> NSError {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey: "The response body could not be decoded.",
            NSUnderlyingErrorKey: error,
            FailingURLResponseDataErrorKey: data,
        ]
        if let response { info[FailingURLResponseErrorKey] = response }
        if let url = response?.url ?? url { info[NSURLErrorFailingURLErrorKey] = url }
        return NSError(domain: ResponseSerializationErrorDomain, code: NSURLErrorCannotDecodeContentData, userInfo: info)
    }
}

extension URLConnectionOperation {
    /// Suspends until the operation turned finished. Cancelling the calling task cancels the operation;
    /// when it had not started, this throws `URLError(.cancelled)` at once instead of waiting for a
    /// queue that may be suspended.
    func waitForFinish() async throws {
        adoptCurrentServiceContext(replacing: false)   // a span not yet begun is the awaiting task's child
        let waiter = FinishWaiter()
        guard observers.add(waiter) else { return }
        let finished = await withTaskCancellationHandler {
            await waiter.wait()
        } onCancel: {
            cancel()
            let started = state.withLock { $0.lifecycle.hasStarted }
            if !started { waiter.resume(finished: false) }
        }
        guard finished else {
            observers.remove(waiter)
            throw TransportError.cancelled(url: request.url)
        }
    }
}
