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
    /// start and end of one operation are seen in the order they happened. Small response bodies are
    /// serialized right here, in the same hop.
    static let delivery = DispatchQueue(label: "org.operationnetworking.delivery")

    /// Where large response bodies are serialized: concurrent, off the network thread, the delivery
    /// queue and the completion queue.
    static let processing = DispatchQueue(label: "org.operationnetworking.processing", attributes: .concurrent)

    /// The default `completionGroup`.
    static let group = DispatchGroup()

    /// Whether the caller is running on the default callback queue.
    static var isOnCallbackQueue: Bool {
        DispatchQueue.getSpecific(key: callbackQueueKey) == true
    }
}
