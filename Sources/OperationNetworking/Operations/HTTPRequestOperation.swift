import Dispatch
import Foundation

/// A `URLConnectionOperation` for HTTP and HTTPS that validates and serializes its response and
/// reports through success and failure blocks (AFNetworking's `AFHTTPRequestOperation`).
///
/// The response is serialized on a processing queue (neither the network thread nor the completion
/// queue); then `success` or `failure` runs on the completion queue inside the completion group, and
/// only after it returned does the operation turn finished — so an operation that depends on this
/// one starts after this one's handler ran.
/// - Threading: as `URLConnectionOperation`; the handlers and serializer are guarded by its lock.
open class HTTPRequestOperation: URLConnectionOperation, @unchecked Sendable {
    /// Called with the operation and its serialized response object.
    public typealias Success = @Sendable (HTTPRequestOperation, Any?) -> Void
    /// Called with the operation and the transport, cancel, validation or serialization error.
    public typealias Failure = @Sendable (HTTPRequestOperation, Error) -> Void

    /// Made on first use, so an operation whose serializer is set (the manager's) never builds the default.
    @exclusivity(unchecked) private var explicitSerializer: HTTPResponseSerializer?                          // guarded by lock
    /// The serializer (call with `lock` held).
    private var storedSerializer: HTTPResponseSerializer {
        if let serializer = explicitSerializer { return serializer }
        let serializer = HTTPResponseSerializer()
        explicitSerializer = serializer
        return serializer
    }
    @exclusivity(unchecked) private var success: Success?                                                    // guarded by lock
    @exclusivity(unchecked) private var failure: Failure?                                                    // guarded by lock
    /// Whether `responseObject` was computed (it is computed once).
    @exclusivity(unchecked) private var serialized = false                                                   // guarded by lock
    @exclusivity(unchecked) private var storedResponseObject: Any?                                           // guarded by lock
    @exclusivity(unchecked) private var serializationError: Error?                                           // guarded by lock
    /// Whether the transfer ended, so the response is complete and may be serialized.
    @exclusivity(unchecked) private var transferOver = false                                                 // guarded by lock
    /// The completion queue the last end's handlers run on, read at that end (as its group is).
    @exclusivity(unchecked) private var handlersQueue: DispatchQueue?                                        // guarded by lock

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
        get { lock.withLock { storedSerializer } }
        set {
            lock.withLock {
                explicitSerializer = newValue
                serialized = false
                storedResponseObject = nil
                serializationError = nil
            }
        }
    }

    /// The response serialized by `responseSerializer`, computed once after the transfer ended; a
    /// serialization or validation error becomes `error` (the object may still be set, e.g. the JSON
    /// body of a 404). `nil` before the end and after a transport error.
    public var responseObject: Any? {
        // Once serialized (the handlers' read, and every later one), one acquisition of the lock and
        // one copy of the object; the inputs are read only for the first serialization.
        // `Any?` is copied and destroyed through the runtime's generic witnesses, so the lock is taken
        // and released by hand, with no closure to capture the object into.
        lock.lock()
        guard transferOver, mutable.error == nil else {
            lock.unlock()
            return nil
        }
        if serialized {
            defer { lock.unlock() }
            return storedResponseObject
        }
        // The first read takes the inputs in the same acquisition.
        let inputs = serializationInputsLocked
        lock.unlock()
        return serialize(inputs, returningObject: true)
    }

    /// What the first serialization reads, taken under the lock in one acquisition.
    private struct SerializationInputs {
        let serializer: HTTPResponseSerializer
        let data: Data?
        let head: ResponseHead?
    }

    /// The serializer, body and head as they are now; read with `lock` held.
    private var serializationInputsLocked: SerializationInputs {
        SerializationInputs(serializer: storedSerializer, data: mutable.responseData, head: mutable.head)
    }

    /// Serializes from `inputs` (call without the lock) and stores the result, unless another read
    /// stored one first. Returns the stored object only when `returningObject`: an `Any?` returned
    /// only to be dropped is copied and destroyed through the runtime's generic witnesses.
    private func serialize(_ inputs: SerializationInputs, returningObject: Bool) -> Any? {
        let serializer = inputs.serializer, data = inputs.data
        var result: Any?
        var failure: Error?
        do {
            // The library's own serializers validate from the raw head when it passes, so a response
            // nobody reads never pays for building Foundation's HTTPURLResponse.
            if let head = inputs.head, serializer.acceptsWithoutResponseObject(head, data: data) {
                result = try serializer.decodedObject(from: data, head: head)
            } else {
                result = try serializer.responseObject(for: response, data: data)
            }
        } catch {
            failure = error
            result = (error as NSError).userInfo[ResponseObjectErrorKey]
        }
        lock.lock()
        defer { lock.unlock() }
        if !serialized {
            serialized = true
            storedResponseObject = consume result
            serializationError = failure
        }
        guard returningObject else { return nil }
        return storedResponseObject
    }

    /// The serialization error if there was one, otherwise the transport error.
    open override var error: Error? {
        // One acquisition for both (read for every operation that ends).
        lock.lock()
        let serialization = serializationError
        let failure = serialization == nil ? transportFailureLocked() : nil
        lock.unlock()
        return serialization ?? failure.map { TransportError.completed($0.error, url: $0.url) }
    }

    /// Sets the blocks run when the operation ends: exactly one of them, on the completion queue,
    /// inside the completion group, before the operation turns finished. A cancelled operation calls
    /// `failure` with `URLError(.cancelled)`. Calling it again replaces both.
    @preconcurrency
    public func setCompletionBlockWithSuccess(_ success: Success?, failure: Failure?) {
        lock.withLock {
            self.success = success
            self.failure = failure
        }
    }

    /// Archives everything `URLConnectionOperation` does, plus the response serializer.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(responseSerializer, forKey: OperationCodingKeys.responseSerializer)
    }

    /// Restores everything `URLConnectionOperation` does, plus the response serializer.
    open override func restore(from coder: NSCoder) {
        super.restore(from: coder)
        if let serializer = coder.decodeChecked(HTTPResponseSerializer.self, forKey: OperationCodingKeys.responseSerializer) {
            responseSerializer = serializer
        }
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

    // MARK: - Internal

    override func releaseBlocksLocked() {
        success = nil
        failure = nil
        super.releaseBlocksLocked()
    }

    /// Response bodies up to this size may be handled on the delivery queue, in the hop that brings the
    /// transfer's end off the network thread (see `serializesOnDeliveryQueue`); larger ones go to the
    /// concurrent processing queue.
    static let inlineSerializationLimit = 64 * 1024

    /// Whether serializing with `serializer` may stay on the delivery queue: only for the raw-data
    /// serializer itself, whose work is a status and content-type check. Every other one — a decoder,
    /// a caller's subclass — takes a time the body or the caller decides, and the delivery queue is the
    /// one serial queue every transfer's end goes through: it runs on the concurrent processing queue,
    /// where it holds only its own operation.
    private static func serializesOnDeliveryQueue(_ serializer: HTTPResponseSerializer) -> Bool {
        type(of: serializer) == HTTPResponseSerializer.self
    }

    override func transferDidEnd(batch: CompletionBatch? = nil) {
        lock.lock()
        transferOver = true
        let hadHandlers = success != nil || failure != nil, bodySize = mutable.responseData?.count ?? 0
        // After a transport failure or cancel there is nothing to serialize.
        let inline = !hadHandlers || (batch != nil && bodySize <= HTTPRequestOperation.inlineSerializationLimit
            && (mutable.error != nil || HTTPRequestOperation.serializesOnDeliveryQueue(storedSerializer)))
        // Read here, not through `completionQueue` and `completionGroup`: two lock round trips fewer.
        // The same acquisition reads whether the operation opted into the cache, and the inputs of
        // the serialization a handler will read (serialized below, on this queue, for the raw-data serializer).
        let configuration = mutable.configuration
        let queue = configuration.effectiveCompletionQueue, group = configuration.effectiveCompletionGroup
        let mayCache = optedIntoCacheLocked
        let inputs = hadHandlers && inline && mutable.error == nil && !serialized ? serializationInputsLocked : nil
        handlersQueue = queue
        lock.unlock()
        // Captures only the operation (the queue is read back from it), so the closure needs no context of its own.
        let handlers: @Sendable () -> Void = { [self] in
            // Read now, not at the transfer's end: blocks set meanwhile are the ones that run. The object
            // serialized at the end comes in the same acquisition (not through `responseObject`, which
            // would take the lock again). Not `withLock`: blocks returned through its generic result
            // are re-abstracted both ways.
            lock.lock()
            let success = self.success, failure = self.failure, wasSerialized = serialized, queue = handlersQueue
            let object = wasSerialized && success != nil ? storedResponseObject : nil
            lock.unlock()
            if success != nil || failure != nil {
                // Nothing serialized when the blocks were set after the end, or the serializer replaced
                // since: serialize before reading `error`, of which a validation failure is part (AFN
                // 2.x reads `error` after `responseObject`).
                if !wasSerialized { _ = responseObject }
                if let problem = error {
                    failure?(self, problem)
                } else if let success {
                    // Passed as it is: through a conditional expression it was copied once more (an
                    // `Any?` copy goes through the runtime's generic witnesses).
                    if wasSerialized { success(self, object) } else { success(self, responseObject) }
                }
            }
            finishOperation(runningOn: queue)
        }
        if inline {
            if mayCache { storeInCacheIfAllowed() }
            // Serialized here, once, when a handler will read it (for blocks set later, the hop serializes).
            if let inputs { _ = serialize(inputs, returningObject: false) }
            if let batch { batch.add(on: queue, group: group, handlers) } else { queue.async(group: group, execute: handlers) }
            return
        }
        group.enter()
        CallbackQueues.processing.async { [self] in
            storeInCacheIfAllowed()
            _ = responseObject   // serialized here, once, off the completion queue
            queue.async(group: group, execute: handlers)
            group.leave()
        }
    }

}
