import Dispatch
import Foundation

/// Counts finished members of a batch; guarded by its lock, hence `@unchecked Sendable`.
private final class BatchCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var finished = 0   // guarded by lock

    func next() -> Int { lock.withLock { finished += 1; return finished } }
}

extension URLConnectionOperation {
    /// AFN's `batchOfRequestOperations:progressBlock:completionBlock:`: returns `operations` plus one
    /// last operation that depends on all of them and calls `completion` after every member's own
    /// completion handling ran. Nothing is enqueued: add the returned array to a queue.
    ///
    /// `progress(finished, total)` runs once per member, on that member's completion queue, after its
    /// handlers and before it turns finished, with `finished` counting 1, 2, … total (strictly in order
    /// when the members share a serial completion queue, as with the default).
    /// `completion` runs on the first member's completion queue (the library's callback queue by default).
    @preconcurrency
    public static func batch(of operations: [URLConnectionOperation],
                             progress: (@Sendable (Int, Int) -> Void)?,
                             completion: (@Sendable ([URLConnectionOperation]) -> Void)?) -> [Operation] {
        let queue = operations.first?.effectiveCompletionQueue ?? CallbackQueues.callback
        let total = operations.count
        let counter = BatchCounter()
        let batchOperation = BlockOperation {
            queue.async { completion?(operations) }
        }
        for operation in operations {
            operation.addFinishHook { progress?(counter.next(), total) }
            batchOperation.addDependency(operation)
        }
        return operations + [batchOperation]
    }
}
