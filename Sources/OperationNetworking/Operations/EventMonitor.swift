import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Watches the life of operations: logging, metrics, tracing (new, not in AFNetworking).
///
/// Every method has an empty default, so a monitor implements only what it needs. For one
/// operation the calls come in this order:
/// 1. `operationDidStart(_:)` once, when its first transfer starts. An operation cancelled before
///    it started skips it (and `didReceive`) and gets only `operationDidFinish(_:)`.
/// 2. `operation(_:didReceive:)` once per transfer that got a response (the final one, after any
///    redirect or authentication round); a download resumed after `pause()` is one more transfer.
/// 3. `operation(_:willRetryAfter:attempt:error:)` before each further attempt its `RetryPolicy`
///    makes (after the `didReceive` of the attempt that got a retryable status).
/// 4. `operationDidFinish(_:)` exactly once, after the success/failure blocks ran and *before* the
///    operation turns `isFinished` (read `error`, `response`, `metrics` on it; `metrics.cacheStatus`
///    says whether the HTTP cache answered, revalidated or stored it).
///
/// - Threading: every call runs on one serial queue of the library, `org.operationnetworking.monitors`
///   (never on the network thread; `operationDidFinish(_:)` is run synchronously from the finishing
///   operation's completion queue, so it may borrow that queue's thread), so a monitor is never called
///   concurrently with itself and needs no lock for state only these methods touch. Keep the methods short: they hold up every other monitor,
///   and `operationDidFinish(_:)` holds up the operation's finishing. Never wait there for the
///   operation or its completion queue (it would deadlock).
public protocol EventMonitor: AnyObject, Sendable {
    /// The operation started its first transfer (before any byte of it was sent). Default: nothing.
    func operationDidStart(_ operation: URLConnectionOperation)
    /// A transfer of the operation received its response head. Default: nothing.
    func operation(_ operation: URLConnectionOperation, didReceive response: HTTPURLResponse)
    /// Another attempt follows after `delay` seconds; `attempt` is its number (2, 3, …), `error` the
    /// transport error, or `nil` after a retryable status. Default: nothing.
    func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?)
    /// The operation ended (completed, failed or cancelled) and is about to turn finished. Default: nothing.
    func operationDidFinish(_ operation: URLConnectionOperation)
}

extension EventMonitor {
    /// Does nothing.
    public func operationDidStart(_ operation: URLConnectionOperation) {}
    /// Does nothing.
    public func operation(_ operation: URLConnectionOperation, didReceive response: HTTPURLResponse) {}
    /// Does nothing.
    public func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int,
                          error: Error?) {}
    /// Does nothing.
    public func operationDidFinish(_ operation: URLConnectionOperation) {}
}

extension CallbackQueues {
    /// Where every event monitor runs: one serial queue, so no monitor is ever called concurrently
    /// and the events of one operation keep their order.
    static let monitors = DispatchQueue(label: "org.operationnetworking.monitors")
}

extension URLConnectionOperation {
    /// Told of this operation's start, responses and finish (see `EventMonitor`). Default: empty; the
    /// manager sets its own. Set it before the operation starts: the list is read once, at the first
    /// event. Not archived; `copy()` keeps it.
    public var eventMonitors: [EventMonitor] {
        get { existingObservers?.monitors ?? [] }
        set {
            if newValue.isEmpty && existingObservers == nil { return }   // nothing to watch: nothing made
            observers.monitors = newValue
        }
    }

    /// The operation's observers, made on first use (most operations have no monitor and no waiter).
    var observers: OperationObservers {
        state.withLock { state in
            if let existing = state.observers { return existing }
            // One made after the operation finished knows it, so a late waiter returns at once.
            let made = OperationObservers(finished: state.lifecycle.isFinished)
            state.observers = made
            return made
        }
    }

    /// The observers if any were made (events for an operation nobody observes cost one lock).
    var existingObservers: OperationObservers? { state.withLock { $0.observers } }

    /// Response body bytes the last transfer delivered to its sink (a resumed prefix included).
    var bodyBytesDelivered: Int64 { state.withLock { $0.run.bodyBytesDelivered } }
}

/// What an operation owes its event monitors and its `value()` waiters, kept apart from the
/// operation's own state so the transport and state machine stay as they are.
///
/// - Threading: its state lives behind its own lock, which is never held while anything else runs.
///   Monitors are called on `CallbackQueues.monitors` after it is released, waiters resumed after it is released.
final class OperationObservers: Sendable {
    private struct State {
        var configured: [EventMonitor] = []
        /// The monitors told of this operation, fixed at its first event so each one sees a whole life.
        var active: [EventMonitor]?
        var startReported = false
        var finishReported = false
        /// Set once the operation turned finished; later waiters return at once.
        var finished: Bool
        var waiters: [FinishWaiter] = []

        /// The monitors for this operation's events (fixed at the first call).
        mutating func activeMonitors() -> [EventMonitor] {
            if let active { return active }
            active = configured
            return configured
        }

        /// For an event that comes after the start: the monitors, and whether the start is still to be
        /// reported to them first (nothing once the finish was reported).
        mutating func reportingAfterStart() -> (monitors: [EventMonitor], reportStart: Bool) {
            guard !finishReported else { return ([], false) }
            defer { startReported = true }
            return (activeMonitors(), !startReported)
        }
    }

    private let state: Protected<State>

    init(finished: Bool) {
        state = Protected(State(finished: finished))
    }

    /// The monitors set on the operation.
    var monitors: [EventMonitor] {
        get { state.withLock { $0.configured } }
        set {
            let replaced = state.withLock { current in
                let old = current.configured
                current.configured = newValue
                return old
            }
            // Monitors no longer configured are released with no lock held.
            withExtendedLifetime(replaced) {}
        }
    }

    // MARK: - Monitor events

    /// The operation started (on the thread calling `start()` or `resume()`, before its transfer is
    /// handed over): the first start is reported.
    func transferDidStart(_ operation: URLConnectionOperation) {
        let monitors: [EventMonitor] = state.withLock {
            guard !$0.startReported, !$0.finishReported else { return [] }
            $0.startReported = true
            return $0.activeMonitors()
        }
        guard !monitors.isEmpty else { return }
        CallbackQueues.monitors.async {
            for monitor in monitors { monitor.operationDidStart(operation) }
        }
    }

    /// Whether anyone listens for responses; read on the network thread before handing a head off.
    var wantsResponses: Bool {
        state.withLock { !($0.active ?? $0.configured).isEmpty && !$0.finishReported }
    }

    /// The final head of a transfer arrived (delivery queue). Monitors set after the operation
    /// started hear of the start here, first.
    func didReceive(_ head: ResponseHead, for operation: URLConnectionOperation) {
        let (monitors, reportStart) = state.withLock { $0.reportingAfterStart() }
        guard !monitors.isEmpty, let response = head.makeResponse() else { return }
        CallbackQueues.monitors.async {
            for monitor in monitors {
                if reportStart { monitor.operationDidStart(operation) }
                monitor.operation(operation, didReceive: response)
            }
        }
    }

    /// Another attempt follows (delivery queue, in the order of the transfer's events).
    func willRetry(_ operation: URLConnectionOperation, after delay: TimeInterval, attempt: Int, error: Error?) {
        let (monitors, reportStart) = state.withLock { $0.reportingAfterStart() }
        guard !monitors.isEmpty else { return }
        let box = UncheckedError(error)
        CallbackQueues.monitors.async {
            for monitor in monitors {
                if reportStart { monitor.operationDidStart(operation) }
                monitor.operation(operation, willRetryAfter: delay, attempt: attempt, error: box.error)
            }
        }
    }

    /// The operation is about to turn finished (on its completion queue): reports the finish and
    /// waits until every monitor saw it, so it comes before `isFinished`. Once only.
    func operationWillFinish(_ operation: URLConnectionOperation) {
        let monitors: [EventMonitor] = state.withLock {
            guard !$0.finishReported else { return [] }
            $0.finishReported = true
            return $0.activeMonitors()
        }
        guard !monitors.isEmpty else { return }
        // Queued behind this operation's earlier events, so the order holds.
        CallbackQueues.monitors.sync {
            for monitor in monitors { monitor.operationDidFinish(operation) }
        }
    }

    // MARK: - Waiting for the finish (async/await)

    /// The operation turned finished: every waiter returns.
    func operationDidFinish() {
        let waiting: [FinishWaiter] = state.withLock {
            $0.finished = true
            let waiting = $0.waiters
            $0.waiters.removeAll()
            return waiting
        }
        for waiter in waiting { waiter.resume(finished: true) }
    }

    /// Registers `waiter`; false when the operation already finished (nothing to wait for).
    func add(_ waiter: FinishWaiter) -> Bool {
        state.withLock {
            guard !$0.finished else { return false }
            $0.waiters.append(waiter)
            return true
        }
    }

    /// Forgets a waiter that stopped waiting early.
    func remove(_ waiter: FinishWaiter) {
        state.withLock { $0.waiters.removeAll { $0 === waiter } }
    }
}

/// One `await` on an operation's finish: resumed exactly once, by the finish or by an early stop.
///
/// - Threading: its state lives behind its own lock; the continuation is resumed after it is released.
final class FinishWaiter: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Bool, Never>?
        /// `true`: the operation finished; `false`: the wait stopped before it did.
        var outcome: Bool?
    }

    private let state = Protected(State())

    /// Suspends until `resume(finished:)`; returns its argument (at once if it already came).
    func wait() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let early: Bool? = state.withLock {
                if let outcome = $0.outcome { return outcome }
                $0.continuation = continuation
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }
    }

    /// Ends the wait; only the first call counts.
    func resume(finished: Bool) {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock {
            guard $0.outcome == nil else { return nil }
            $0.outcome = finished
            let continuation = $0.continuation
            $0.continuation = nil
            return continuation
        }
        continuation?.resume(returning: finished)
    }
}

/// An error handed to the monitor queue. Errors the transport makes are `URLError`s (Sendable); the
/// box carries the rest the same way. Immutable, hence `@unchecked Sendable`.
/// - Threading: immutable; made on the delivery queue, read on `CallbackQueues.monitors`.
private struct UncheckedError: @unchecked Sendable {
    let error: Error?
    init(_ error: Error?) { self.error = error }
}
