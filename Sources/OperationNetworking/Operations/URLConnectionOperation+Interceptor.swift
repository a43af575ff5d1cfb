import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - A run with a RequestInterceptor

extension URLConnectionOperation {
    /// What the interceptor is asked, made under the operation's lock and handed to its task once.
    /// - Threading: made under the lock, then read by one task only: `@unchecked Sendable` because
    ///   `TransferOutcome` and the error are not checked `Sendable`, though never shared.
    struct InterceptorWork: @unchecked Sendable {
        enum Kind {
            /// Adapt the request, at once (the first attempt of a run, or a continuation).
            case adapt
            /// `RetryPolicy` sends the request again after `after` seconds: wait, then adapt.
            case retry(after: TimeInterval, error: Error?)
            /// Ask whether the attempt that ended with `outcome` is sent again; `error` is its failure.
            case decide(TransferOutcome, Transfer, error: Error?)
        }
        var kind: Kind
        /// The request to adapt: the run's request as it would go without an interceptor, its body fresh.
        var request: URLRequest
        /// The number of the attempt the adapted request makes.
        var attempt: Int
    }

    /// The run's dealings with its interceptor. Part of `Run`, made at the first interception.
    /// - Threading: reached only inside `state.withLock`, as the rest of `Run`.
    final class Interception {
        /// Counts the waits; the one under way is `active` (0: none). An answer of another wait is stale.
        var generation: UInt64 = 0
        var active: UInt64 = 0
        /// The task of the wait under way, cancelled when a cancel or pause ends the wait.
        var task: Task<Void, Never>?
        /// Prepared by an event's caller for `OperationState.Action.intercept`.
        var work: InterceptorWork?
        /// The adapted request, for `OperationState.Action.sendAdapted`.
        var adapted: URLRequest?
        /// The attempt the next transfer makes.
        var nextAttempt = 1
        /// The run's request before any adapt, for the adapts of its retries.
        var unadapted: URLRequest?
        /// Whether the run's start was announced (the first wait announces it).
        var announced = false
        /// The interceptor of the run, as it was when the run began (a caller may change the setting meanwhile).
        var interceptor: RequestInterceptor?
    }

    /// `startTransfer` found `interceptor`: the run waits for it to adapt `request` before anything is
    /// sent (in the same acquisition of the lock as the start). Call inside `state.withLock`.
    func beginInterception(_ state: inout State, _ interceptor: RequestInterceptor, request: URLRequest,
                           kept: KeptDownload?) -> Step? {
        if state.run.startedAt == nil { state.run.startedAt = monotonicNow() }
        state.run.attempts = max(state.run.attempts, 1)
        state.run.transfer = nil
        let interception = state.run.interception ?? Interception()
        state.run.interception = interception
        interception.unadapted = request
        interception.interceptor = interceptor
        interception.announced = false
        interception.work = InterceptorWork(kind: .adapt, request: request, attempt: 1)
        return advance(&state) { $0.awaitInterceptor(keeping: kept) }
    }

    /// The transfer of a run with an interceptor ended (not paused): a retry the policy decided goes
    /// through the interceptor's adapt; any other end is first put to the interceptor's `retry`, when
    /// the request can be sent again. Call inside `state.withLock`, from the transfer's end.
    func interceptedEnd(_ state: inout State, _ transfer: Transfer, _ outcome: TransferOutcome) -> Step? {
        guard let interception = state.existingRun?.interception, let unadapted = interception.unadapted else {
            return advance(&state, ending: (outcome, transfer)) { $0.transferEnded() }
        }
        let next = transfer.attempt + 1
        var request = unadapted
        if let multipart = request.httpBodyStream as? MultipartBodyStream {
            guard let fresh = multipart.rebuilt() else { return advance(&state, ending: (outcome, transfer)) { $0.transferEnded() } }
            request.httpBodyStream = fresh
        }
        switch outcome {
        case .retryRequested(let delay, let error):
            interception.work = InterceptorWork(kind: .retry(after: delay, error: error), request: request, attempt: next)
            defer { interception.work = nil }   // dropped when a cancel or pause settled instead
            return advance(&state, ending: (outcome, transfer)) { $0.transferEndedForRetry() }
        case .completed, .completedWithError, .failed:
            guard URLConnectionOperation.canSendAgain(after: transfer) else { break }
            var error: Error?
            if case .completedWithError(let failure) = outcome { error = failure }
            if case .failed(let failure) = outcome { error = failure }
            interception.work = InterceptorWork(kind: .decide(outcome, transfer, error: error), request: request, attempt: next)
            defer { interception.work = nil }
            return advance(&state, ending: (outcome, transfer)) { $0.transferEndedAskingInterceptor() }
        case .cancelled, .paused, .answeredFromCache:
            break
        }
        return advance(&state, ending: (outcome, transfer)) { $0.transferEnded() }
    }

    /// Whether a request whose transfer ended may be sent again, as `RetryPolicy` requires (its
    /// method and attempts aside): not a continued download, no bytes given to a caller's output
    /// stream, no body stream of the caller's (a serializer's multipart body is rebuilt).
    static func canSendAgain(after transfer: Transfer) -> Bool {
        guard transfer.resumeFrom == nil, transfer.outputStream == nil || transfer.bytesReceived == 0 else { return false }
        guard let stream = transfer.originalRequest.httpBodyStream else { return true }
        return (stream as? MultipartBodyStream)?.canBeRebuilt ?? false
    }

    /// `OperationState.Action.intercept`: a new wait for the interceptor, with the work its event's
    /// caller prepared. Call inside `state.withLock`.
    func interceptStep(_ state: inout State) -> Step? {
        guard let interception = state.existingRun?.interception, let work = interception.work,
              let interceptor = interception.interceptor else {
            preconditionFailure("OperationState: intercept without an interceptor's work")   // set before every such event
        }
        interception.work = nil
        interception.generation &+= 1
        interception.active = interception.generation
        let announce = !interception.announced
        interception.announced = true
        return .intercept(work, interceptor, generation: interception.generation, observers: announce ? state.observers : nil,
                          announcesStart: announce)
    }

    /// `OperationState.Action.sendAdapted`: the transfer that sends the adapted request. Call inside
    /// `state.withLock`.
    func sendAdaptedStep(_ state: inout State, kept: KeptDownload?, security: SecurityPolicy.Snapshot?) -> Step? {
        guard let interception = state.existingRun?.interception, let sent = interception.adapted else { return nil }
        interception.adapted = nil
        let stream = state.run.outputStreamOpened ? nil : state.outputStream
        if stream != nil { state.run.outputStreamOpened = true }
        state.run.currentRequest = sent   // what goes on the wire, until a redirect
        // The span's fields go on the adapted request there (the interceptor never sees them); the cache's
        // are on it already (`requestWithConditionalFields`), as the interceptor left them.
        let transfer = makeTransfer(&state, sending: sent, kept: kept, security: security,
                                    attempt: interception.nextAttempt, retriesThroughOwner: true)
        return .sendTransfer(transfer, request: state.request, stream: stream)
    }

    /// Ends the wait under way (a cancel or a pause did): its task, to cancel outside the lock.
    /// Call inside `state.withLock`.
    func abandonInterception(_ state: inout State) -> Task<Void, Never>? {
        guard let interception = state.existingRun?.interception else { return nil }
        interception.active = 0
        interception.work = nil
        interception.adapted = nil
        defer { interception.task = nil }
        return interception.task
    }
}

// MARK: - The interceptor's task

extension URLConnectionOperation {
    /// Starts the task that asks `interceptor` for `work` (outside every lock); its answer comes back
    /// as an event of the wait `generation`, dropped when that wait ended meanwhile.
    func startInterception(_ work: InterceptorWork, _ interceptor: RequestInterceptor, generation: UInt64) {
        let task = Task { [self] in await intercept(work, interceptor, generation: generation) }
        let current = state.withLock { state -> Bool in
            guard let interception = state.existingRun?.interception, interception.active == generation else { return false }
            interception.task = task
            return true
        }
        if !current { task.cancel() }   // a cancel or pause ended the wait before its task was kept
    }

    private func intercept(_ work: InterceptorWork, _ interceptor: RequestInterceptor, generation: UInt64) async {
        var delay: TimeInterval = 0
        switch work.kind {
        case .adapt:
            break
        case .retry(let after, let error):
            delay = after
            announceRetry(after: after, attempt: work.attempt, error: error, generation: generation)
        case .decide(let outcome, let transfer, let error):
            let decision = await interceptor.retry(self, dueTo: error, response: response as? HTTPURLResponse)
            guard !Task.isCancelled else { return }
            switch decision {
            case .doNotRetry:
                return end(generation, outcome, transfer)
            case .retry:
                delay = 0
            case .retryAfter(let seconds):
                delay = seconds.isFinite ? max(0, seconds) : 0
            }
            announceRetry(after: delay, attempt: work.attempt, error: error, generation: generation)
        }
        if delay > 0 { try? await Task.sleep(nanoseconds: UInt64(min(delay, 1e6) * 1e9)) }
        guard !Task.isCancelled else { return }
        do {
            let adapted = try await interceptor.adapt(work.request, for: self)
            let security = securitySnapshot()
            perform(state.withLock { state -> Step? in
                guard let interception = state.existingRun?.interception, interception.active == generation else { return nil }
                interception.active = 0
                interception.task = nil
                interception.adapted = adapted
                interception.nextAttempt = work.attempt
                return advance(&state, security: security) { $0.interceptorAdapted() }
            })
        } catch {
            end(generation, .failed(error), nil)
        }
    }

    /// The monitors hear of the attempt the wait will make, and `attempts` counts it.
    private func announceRetry(after delay: TimeInterval, attempt: Int, error: Error?, generation: UInt64) {
        let observers = state.withLock { state -> OperationObservers? in
            guard state.existingRun?.interception?.active == generation else { return nil }
            state.run.attempts = max(state.run.attempts, attempt)
            return state.observers
        }
        observers?.willRetry(self, after: delay, attempt: attempt, error: error)
    }

    /// The wait ends the run with `outcome` (the attempt's, or the adapt's error), on the delivery
    /// queue, where a transfer's end is delivered.
    private func end(_ generation: UInt64, _ outcome: TransferOutcome, _ transfer: Transfer?) {
        let ending = InterceptedEnding(outcome: outcome, transfer: transfer)
        CallbackQueues.delivery.async { [self] in
            let batch = CompletionBatch()
            perform(state.withLock { state -> Step? in
                guard let interception = state.existingRun?.interception, interception.active == generation else { return nil }
                interception.active = 0
                interception.task = nil
                if ending.transfer == nil { state.run.bodyBytesDelivered = 0 }
                return advance(&state, ending: (ending.outcome, ending.transfer)) { $0.interceptorEnded() }
            }, batch: batch)
            batch.send()
        }
    }
}

/// How a wait for the interceptor ends the run, handed to the delivery queue once.
/// - Threading: made by the interceptor's task, read once on the delivery queue: `@unchecked Sendable`
///   because `TransferOutcome` and its error are not checked `Sendable`, though never shared.
private struct InterceptedEnding: @unchecked Sendable {
    let outcome: TransferOutcome
    let transfer: Transfer?
}
