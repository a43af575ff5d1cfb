import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Carrying out the lifecycle's actions

extension URLConnectionOperation {
    /// An action of the lifecycle with what carrying it out needs, taken under the lock in the same
    /// acquisition as the event that produced it.
    enum Step {
        /// Hand `transfer` to the network thread; `stream` is the caller's output stream to open first
        /// (the first start only), `observers` are told of the start; `local` is how the cache ends the
        /// run without the network, if it does.
        case startTransfer(Transfer, request: URLRequest, stream: OutputStream?, observers: OperationObservers?,
                           local: TransferOutcome?)
        /// Ask the network thread to stop `transfer`, dropping its bytes.
        case cancelTransfer(Transfer)
        /// Ask the network thread to stop `transfer`, keeping its bytes.
        case pauseTransfer(Transfer)
        /// The outcome is stored: run the handlers on `queue` inside `group`, then finish.
        case end(queue: DispatchQueue, group: DispatchGroup)
        /// Readiness changed.
        case readinessChanged
        /// Turn finished: tell `observers`, then run `completion` on `queue` inside `group`.
        case finish(completion: (@Sendable () -> Void)?, queue: DispatchQueue, group: DispatchGroup,
                    observers: OperationObservers?)
    }

    /// Applies `event` to the lifecycle and does the part of its action that belongs under the lock;
    /// returns what is left to do outside it (`nil`: nothing). Call inside `state.withLock`.
    /// - Parameters:
    ///   - security: the policy's snapshot (see `securitySnapshot()`), for an event that may start a transfer.
    ///   - cache: the cache's decision (see `cacheLookup(security:for:)`), for an event that may start a run from nothing.
    ///   - ending: the transfer that ended and how, for `transferEnded`.
    func advance(_ state: inout State, security: SecurityPolicy.Snapshot? = nil, cache: CacheLookup? = nil,
                 ending: (outcome: TransferOutcome, transfer: Transfer)? = nil,
                 _ event: (inout OperationState) -> OperationState.Action?) -> Step? {
        guard let action = event(&state.lifecycle) else { return nil }
        // The two settings the end needs, read in place: copying the whole configuration retains and
        // releases every block and object in it.
        let queue = state.configuration.effectiveCompletionQueue, group = state.configuration.effectiveCompletionGroup
        switch action {
        case .startTransfer(let kept):
            let (transfer, local) = makeTransfer(in: &state, continuing: kept, security: security, cache: cache)
            let stream = state.run.outputStreamOpened ? nil : state.outputStream
            if stream != nil { state.run.outputStreamOpened = true }
            if state.run.startedAt == nil { state.run.startedAt = monotonicNow() }
            state.run.attempts = max(state.run.attempts, 1)
            return .startTransfer(transfer, request: state.request, stream: stream, observers: state.observers, local: local)
        case .cancelTransfer:
            guard let transfer = state.run.transfer else { return nil }
            transfer.requestCancel()   // from now on no request of it starts
            return .cancelTransfer(transfer)
        case .pauseTransfer:
            return state.run.transfer.map { .pauseTransfer($0) }
        case .completeCancelled:
            state.recordCancel()
            state.run.transfer = nil
            return .end(queue: queue, group: group)
        case .deliver(let cancelled):
            if let ending { state.record(cancelled ? .cancelled : ending.outcome, of: ending.transfer) }
            // The outcome is stored: the transfer (its decoder's buffers, trust store, network thread)
            // goes now, not with the operation, which apps keep long after it finished.
            state.run.transfer = nil
            return .end(queue: queue, group: group)
        case .readinessChanged:
            return .readinessChanged
        case .finish:
            // Every block is released here, so an object that its own operation's block captured is
            // freed once the operation finished (AFN broke cycles this way).
            state.configuration.releaseBlocks()
            state.run.uploadReporter = nil
            state.run.downloadReporter = nil
            let completion = state.completionBlock
            state.completionBlock = nil
            return .finish(completion: completion, queue: queue, group: group, observers: state.observers)
        }
    }

    /// Carries out what `advance` left to do, outside the lock. `batch` gathers completion-queue work
    /// when the step comes from a transfer's end on the delivery queue.
    func perform(_ step: consuming Step?, batch: CompletionBatch? = nil) {
        guard let step else { return }
        switch step {
        case .startTransfer(let transfer, let request, let stream, let observers, let local):
            // An answer from the cache, or an output stream that will not open, still goes through
            // the network thread, so that a pause or cancel already on its way meets it there.
            if let local = local ?? streamOutcome(for: request, opening: stream) { transfer.endOnArrival(local) }
            willChangeValue(forKey: "isExecuting")
            didChangeValue(forKey: "isExecuting")
            // Before the transfer leaves: the start is queued ahead of anything the transfer causes,
            // on the queues that later carry the finish.
            observers?.transferDidStart(self)
            CallbackWork.shared.async(group: nil) { [self] in
                NotificationCenter.default.post(name: .operationDidStart, object: self)
            }
            NetworkThread.shared.submit(.add(transfer))
        case .cancelTransfer(let transfer):
            NetworkThread.shared.submit(.cancel(transfer))
        case .pauseTransfer(let transfer):
            NetworkThread.shared.submit(.pause(transfer))
            post(.operationDidFinish)
        case .end(let queue, let group):
            transferDidEnd(on: queue, group: group, batch: batch)
        case .readinessChanged:
            willChangeValue(forKey: "isReady")
            didChangeValue(forKey: "isReady")
        case .finish(let completion, let queue, let group, let observers):
            // Only "isFinished" is announced: corelibs has no KVO, and its handler for "isExecuting"
            // acts only on a change *to* executing (corelibs' Operation.observeValue).
            willChangeValue(forKey: "isFinished")
            didChangeValue(forKey: "isFinished")
            observers?.operationDidFinish()   // resumes `value()` waiters
            post(.operationDidFinish)
            CallbackWork.shared.changed()   // a handler waiting for this operation on the callback queue
            if let completion { CallbackQueues.async(on: queue, group: group, completion) }
        }
    }

    /// Builds the transfer for a start or a continuation of `kept`, resetting the outcome of an
    /// earlier run, and how the cache ends it without the network, if it does. Call inside `state.withLock`.
    private func makeTransfer(in state: inout State, continuing kept: KeptDownload?, security: SecurityPolicy.Snapshot?,
                              cache: CacheLookup?) -> (Transfer, TransferOutcome?) {
        state.run.currentRequest = nil   // the request as given, until a redirect
        // A run's outcome belongs to that run: a restored finished operation runs again from nothing.
        state.run.error = nil
        if kept == nil {
            state.run.head = nil
            state.run.response = nil
            state.run.responseData = nil
            state.run.metrics = nil
        }
        let (sent, local) = URLConnectionOperation.beginCacheRun(in: &state, continuing: kept != nil, lookup: cache)
        let transfer = Transfer(request: sent, outputStream: state.outputStream, resumeFrom: kept?.point,
                                initialBody: kept?.bytes ?? Data(), security: security,
                                clientCertificate: state.configuration.clientCertificate,
                                maximumBodySize: state.configuration.maximumResponseSize,
                                retryPolicy: state.configuration.retryPolicy, proxy: state.configuration.proxy,
                                delegate: self)
        state.run.transfer = transfer
        return (transfer, local)
    }
}

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
        let (hooks, stream, observers) = state.withLock { state in
            defer { state.finishHooks.removeAll() }
            return (state.finishHooks, state.run.outputStreamOpened ? state.outputStream : nil, state.observers)
        }
        hooks.forEach { $0() }
        stream?.close()
        observers?.operationWillFinish(self)   // monitors hear of the finish before isFinished
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
