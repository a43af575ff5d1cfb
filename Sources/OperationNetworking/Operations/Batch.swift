import Dispatch
import Foundation

/// Counts finished members of a batch, from whichever completion queue each one finishes on.
private final class BatchCounter: Sendable {
    private let finished = Protected(0)

    func next() -> Int {
        finished.withLock {
            $0 += 1
            return $0
        }
    }
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
            CallbackQueues.async(on: queue) { completion?(operations) }
        }
        for operation in operations {
            operation.addFinishHook { progress?(counter.next(), total) }
            batchOperation.addDependency(operation)
        }
        return operations + [batchOperation]
    }
}
