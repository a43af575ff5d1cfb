import Dispatch

/// The queues the library runs its own and its users' work on (never the network thread).
///
/// - Threading: immutable after init.
enum CallbackQueues {
    /// Marks the default callback queue, so a wait from inside it can be detected.
    static let callbackQueueKey = DispatchSpecificKey<Bool>()

    /// The default `completionQueue`: one serial queue for the process, so callbacks never overlap
    /// (the guarantee AFNetworking's main-queue default gave, without needing a main loop).
    static let callback: DispatchQueue = {
        let queue = DispatchQueue(label: "org.operationnetworking.callback")
        queue.setSpecific(key: callbackQueueKey, value: true)
        return queue
    }()

    /// Where the network thread's batches of transfer starts and ends are delivered: serial, so the
    /// start and end of one operation are seen in the order they happened. Nothing whose time a body or
    /// a caller decides runs here, as every transfer's end waits behind it: only the raw-data
    /// serializer's check on a body up to 64 KiB is done in this hop (`HTTPRequestOperation.preparationQueue`).
    static let delivery = DispatchQueue(label: "org.operationnetworking.delivery")

    /// Where responses are serialized (decoders and callers' serializers): concurrent, off the network
    /// thread, the delivery queue and the completion queue, so a slow or hostile body holds only its
    /// own operation.
    static let processing = DispatchQueue(label: "org.operationnetworking.processing", attributes: .concurrent)

    /// The default `completionGroup`.
    static let group = DispatchGroup()

    /// Whether the caller is running on the default callback queue.
    static var isOnCallbackQueue: Bool {
        DispatchQueue.getSpecific(key: callbackQueueKey) == true
    }
}

extension URLConnectionOperation {
    /// Where the library calls back when nobody chose a queue: the process's one serial callback
    /// queue (label `org.operationnetworking.callback`). Completion, success, failure, progress and
    /// batch blocks of an operation whose `completionQueue` is `nil` (the default) run here, as do a
    /// manager's request-building failures, `NetworkReachabilityManager`'s status block without a
    /// `callbackQueue`, and the multipart file-writing completion. AFNetworking's default was the
    /// main queue, which a Linux program rarely drains. Ported code that hops "back to where the
    /// handlers run" names this queue instead of guessing (`DispatchQueue.global()` is concurrent, so
    /// work sent there can overlap the handlers). Redirect and challenge blocks are not called here
    /// (they run on the network thread). Constant; read it from any thread.
    public static var defaultCompletionQueue: DispatchQueue { CallbackQueues.callback }
}
