import Foundation
@testable import OperationNetworking
import XCTest

/// `OperationState`'s events of a run with a `RequestInterceptor`, alone, no network: `intercepting`
/// with every caller event and every interceptor event, and the ends of a transfer that lead into it
/// from each phase a transfer can end in.
final class InterceptorStateTests: LibraryTestCase {
    private static let kept = KeptDownload(point: ResumePoint(offset: 7, validator: "\"v\"", rangesSupported: true),
                                           bytes: Data([1, 2, 3, 4, 5, 6, 7]))

    private func intercepting(kept: KeptDownload?) -> OperationState {
        var state = OperationState(phase: .executing)
        XCTAssertEqual(label(state.awaitInterceptor(keeping: kept)), "intercept")
        return state
    }

    /// `intercepting` meets each caller event and each answer of the interceptor.
    func testInterceptingWithEveryEvent() {
        let rows: [(String, (inout OperationState) -> OperationState.Action?, String, String)] = [
            ("start", { $0.start() }, "intercepting none", "intercepting+kept none"),
            ("resume", { $0.resume() }, "intercepting none", "intercepting+kept none"),
            ("cancel", { $0.cancel() }, "completing(cancelled) cancelInterception", "completing(cancelled) cancelInterception"),
            // Nothing on the network thread to wait for: paused at once; a continuation keeps its bytes.
            ("pause", { $0.pause() }, "startedParked pauseInterception", "paused pauseInterception"),
            ("adapted", { $0.interceptorAdapted() }, "executing sendAdapted(fresh)", "executing sendAdapted(kept)"),
            ("ended", { $0.interceptorEnded() }, "completing deliver", "completing deliver"),
        ]
        for (name, event, fresh, withKept) in rows {
            var state = intercepting(kept: nil)
            let action = event(&state)
            XCTAssertEqual("\(label(state.phase)) \(label(action))", fresh, name)
            var keeping = intercepting(kept: InterceptorStateTests.kept)
            let keptAction = event(&keeping)
            XCTAssertEqual("\(label(keeping.phase)) \(label(keptAction))", withKept, "\(name), with kept bytes")
        }
        let state = intercepting(kept: nil)
        XCTAssertTrue(state.isExecuting && !state.isPaused && !state.isCancelled && !state.isFinished && state.hasStarted)
        XCTAssertFalse(state.isPausing || state.hasEnded || state.acceptsArchivedState)
        XCTAssertTrue(OperationState(phase: .completing(cancelled: true)).isCancelled, "a cancel while intercepting took effect")
    }

    /// An answer that comes after a cancel or a pause left `intercepting` changes nothing.
    func testAStaleAnswerChangesNothing() {
        for phase: OperationState.Phase in [.startedParked, .paused(InterceptorStateTests.kept), .completing(cancelled: true),
                                             .finished(cancelled: true), .executing] {
            var adapted = OperationState(phase: phase)
            XCTAssertNil(adapted.interceptorAdapted(), "\(phase)")
            XCTAssertEqual(label(adapted.phase), label(phase))
            var ended = OperationState(phase: phase)
            XCTAssertNil(ended.interceptorEnded(), "\(phase)")
            XCTAssertEqual(label(ended.phase), label(phase))
        }
    }

    /// A transfer's end with a retry the policy decided, or one the interceptor is asked about, from each
    /// phase a transfer can end in.
    func testTransferEndsThatLeadToTheInterceptor() {
        let phases: [(String, OperationState.Phase)] = [
            ("executing", .executing), ("pausing", .pausing(then: .stayPaused)), ("pausing→resume", .pausing(then: .resume)),
            ("pausing→cancel", .pausing(then: .cancel)), ("cancelling", .cancelling),
        ]
        let forRetry = [
            "executing": "intercepting intercept", "pausing": "startedParked none", "pausing→resume": "intercepting intercept",
            "pausing→cancel": "completing(cancelled) completeCancelled", "cancelling": "completing(cancelled) deliverCancelled",
        ]
        let asking = [
            "executing": "intercepting intercept", "pausing": "completing deliver", "pausing→resume": "completing deliver",
            "pausing→cancel": "completing(cancelled) deliverCancelled", "cancelling": "completing(cancelled) deliverCancelled",
        ]
        for (name, phase) in phases {
            var retrying = OperationState(phase: phase)
            let retryAction = retrying.transferEndedForRetry()
            XCTAssertEqual("\(label(retrying.phase)) \(label(retryAction))", forRetry[name], "retry from \(name)")
            var asked = OperationState(phase: phase)
            let askAction = asked.transferEndedAskingInterceptor()
            XCTAssertEqual("\(label(asked.phase)) \(label(askAction))", asking[name], "asking from \(name)")
        }
    }

    private func label(_ action: OperationState.Action?) -> String {
        guard let action else { return "none" }
        switch action {
        case .startTransfer: return "startTransfer"
        case .deliverAnswer: return "deliverAnswer"
        case .cancelTransfer: return "cancelTransfer"
        case .pauseTransfer: return "pauseTransfer"
        case .completeCancelled: return "completeCancelled"
        case .readinessChanged: return "readiness"
        case .deliver(let cancelled): return cancelled ? "deliverCancelled" : "deliver"
        case .finish: return "finish"
        case .intercept: return "intercept"
        case .sendAdapted(let kept): return kept == nil ? "sendAdapted(fresh)" : "sendAdapted(kept)"
        case .cancelInterception: return "cancelInterception"
        case .pauseInterception: return "pauseInterception"
        }
    }

    private func label(_ phase: OperationState.Phase) -> String {
        switch phase {
        case .ready: return "ready"
        case .parked: return "parked"
        case .startedParked: return "startedParked"
        case .cancelledParked: return "cancelledParked"
        case .executing: return "executing"
        case .intercepting(let kept): return kept == nil ? "intercepting" : "intercepting+kept"
        case .answering: return "answering"
        case .cancelling: return "cancelling"
        case .pausing: return "pausing"
        case .paused: return "paused"
        case .completing(let cancelled): return cancelled ? "completing(cancelled)" : "completing"
        case .finished(let cancelled): return cancelled ? "finished(cancelled)" : "finished"
        }
    }
}
