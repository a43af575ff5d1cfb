import Dispatch
import Foundation

// MARK: - The end: preparation, handlers, finish

extension URLConnectionOperation {
    /// Response bodies up to this size may be prepared (cached, checked) on the delivery queue, in the
    /// hop that brings the transfer's end off the network thread; larger ones go to the processing queue.
    static let inlinePreparationLimit = 64 * 1024

    /// The transfer is over (`error` tells how): prepares the handlers where `preparationQueue` says,
    /// runs them on `queue` inside `group`, then finishes. `batch` (on the delivery queue) gathers
    /// completion-queue work; without one it is dispatched at once.
    final func transferDidEnd(on queue: DispatchQueue, group: DispatchGroup, batch: CompletionBatch?) {
        let handlers: @Sendable () -> Void = { [self] in
            // A wait for this operation from its own handlers could never end (see `waitUntilFinished()`).
            state.withLock { $0.run.handlersRunning = true }
            runHandlers()
            finishOperation()
        }
        guard let elsewhere = preparationQueue(onDeliveryQueue: batch != nil) else {
            prepareHandlers()
            if let batch { batch.add(on: queue, group: group, handlers) } else { CallbackQueues.async(on: queue, group: group, handlers) }
            return
        }
        group.enter()
        elsewhere.async { [self] in
            prepareHandlers()
            CallbackQueues.async(on: queue, group: group, handlers)
            group.leave()
        }
    }

    /// Runs the finish hooks, closes the output stream, tells the monitors, then turns the operation
    /// finished (see `Step.finish`). Runs on the completion queue.
    func finishOperation() {
        let (hooks, stream, observers, trace) = state.withLock { state in
            defer { state.finishHooks.removeAll() }
            return (state.finishHooks, state.run.outputStreamOpened ? state.outputStream : nil, state.observers,
                    state.takeTraceEnding())
        }
        hooks.forEach { $0() }
        stream?.close()
        observers?.operationWillFinish(self)   // monitors hear of the finish before isFinished
        endTrace(trace)
        // The observers are read again with the finish: a `value()` waiter made meanwhile is resumed.
        perform(state.withLock { advance(&$0) { $0.handlersRan() } })
    }

    /// Adds work to run on the completion queue just before the operation turns finished.
    func addFinishHook(_ hook: @escaping @Sendable () -> Void) {
        state.withLock { $0.finishHooks.append(hook) }
    }

    /// The operation's completion queue, default applied.
    var effectiveCompletionQueue: DispatchQueue { state.withLock { $0.configuration.effectiveCompletionQueue } }
}
