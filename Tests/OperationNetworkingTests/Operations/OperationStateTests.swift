import Foundation
@testable import OperationNetworking
import XCTest

/// `OperationState` alone, no network: one row per (phase, event) pair, the new phase, the action and
/// whether the operation counts as cancelled. Pairs marked `invalid` are library bugs that stop the
/// process (`preconditionFailure`); they are listed so the table is complete, and never run. An archive's
/// state reaches the machine from a caller (`restore(from:)` is open): refused, never invalid, once
/// anything happened to the operation.
final class OperationStateTests: LibraryTestCase {
    /// How each phase of the table is reached from a new state.
    private static let setups: [String: [Event]] = [
        "ready": [],
        "ready·cancelled": [.cancel],
        "parked": [.pause],
        "parked·started": [.pause, .start],
        "parked+kept": [.restorePaused],
        "cancelledParked": [.restorePaused, .cancel],
        "executing": [.start],
        "answering": [.start, .answeredWithoutNetwork],
        "cancelling": [.start, .cancel],
        "pausing": [.start, .pause],
        "pausing→resume": [.start, .pause, .resume],
        "pausing→cancel": [.start, .pause, .cancel],
        "paused": [.start, .pause, .transferPaused],
        "completing": [.start, .transferEnded],
        "finished": [.start, .transferEnded, .handlersRan],
        "completing·cancelled": [.start, .cancel, .transferEnded],
        "finished·cancelled": [.start, .cancel, .transferEnded, .handlersRan],
    ]

    private enum Event: String, CaseIterable {
        case start, cancel, pause, resume, answeredWithoutNetwork, transferPaused, transferEnded, restorePaused, restoreFinished,
             handlersRan
    }

    /// `phase action [cancelled]`, or `invalid`.
    private static let table: [String: [Event: String]] = [
        "ready": [.start: "executing start(fresh)", .cancel: "ready none cancelled", .pause: "parked readiness",
                  .resume: "ready none", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid",
                  .restorePaused: "parked+kept -", .restoreFinished: "finished -",
                  .handlersRan: "invalid"],
        "ready·cancelled": [.start: "completing completeCancelled cancelled", .cancel: "ready none cancelled",
                            .pause: "ready none cancelled", .resume: "ready none cancelled", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid",
                            .transferEnded: "invalid", .restorePaused: "ready refused cancelled", .restoreFinished: "ready refused cancelled", .handlersRan: "invalid"],
        "parked": [.start: "parked·started none", .cancel: "ready readiness cancelled", .pause: "parked none",
                   .resume: "ready readiness", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid",
                   .restorePaused: "parked refused", .restoreFinished: "parked refused", .handlersRan: "invalid"],
        // The queue read the readiness before the pause landed (or the caller started it): the start is
        // remembered, and resume() or cancel() carries the operation on (a queue never starts it again).
        "parked·started": [.start: "parked·started none", .cancel: "completing completeCancelled cancelled",
                           .pause: "parked·started none", .resume: "executing start(fresh)", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid",
                           .transferEnded: "invalid", .restorePaused: "parked·started refused", .restoreFinished: "parked·started refused", .handlersRan: "invalid"],
        "parked+kept": [.start: "executing start(kept)", .cancel: "cancelledParked none cancelled", .pause: "parked+kept none",
                        .resume: "executing start(kept)", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid",
                        .restorePaused: "parked+kept refused", .restoreFinished: "parked+kept refused", .handlersRan: "invalid"],
        // A restored paused download cancelled before it continued: the start or the resume that would
        // have continued it ends it (it need not be in a queue, so a resume may be all that comes).
        "cancelledParked": [.start: "completing completeCancelled cancelled", .cancel: "cancelledParked none cancelled",
                            .pause: "cancelledParked none cancelled", .resume: "completing completeCancelled cancelled",
                            .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid",
                            .restorePaused: "cancelledParked refused cancelled", .restoreFinished: "cancelledParked refused cancelled",
                            .handlersRan: "invalid"],
        "executing": [.start: "executing none", .cancel: "cancelling cancelTransfer cancelled", .pause: "pausing pauseTransfer",
                      .resume: "executing none", .answeredWithoutNetwork: "answering deliverAnswer", .transferPaused: "invalid", .transferEnded: "completing deliver",
                      .restorePaused: "executing refused", .restoreFinished: "executing refused", .handlersRan: "invalid"],
        // Answered without the network (the cache): no transfer to stop or pause; the answer on its way
        // is delivered as a cancel after a cancel, and overtakes a pause as a transfer's end does.
        "answering": [.start: "answering none", .cancel: "cancelling none cancelled", .pause: "pausing pauseTransfer",
                      .resume: "answering none", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid",
                      .transferEnded: "completing deliver", .restorePaused: "answering refused",
                      .restoreFinished: "answering refused", .handlersRan: "invalid"],
        "cancelling": [.start: "cancelling none cancelled", .cancel: "cancelling none cancelled",
                       .pause: "cancelling none cancelled", .resume: "cancelling none cancelled", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid",
                       .transferEnded: "completing deliverCancelled cancelled", .restorePaused: "cancelling refused cancelled", .restoreFinished: "cancelling refused cancelled",
                       .handlersRan: "invalid"],
        "pausing": [.start: "pausing none", .cancel: "pausing→cancel none cancelled", .pause: "pausing none",
                    .resume: "pausing→resume none", .answeredWithoutNetwork: "invalid", .transferPaused: "paused none",
                    .transferEnded: "completing deliver", .restorePaused: "pausing refused", .restoreFinished: "pausing refused", .handlersRan: "invalid"],
        "pausing→resume": [.start: "pausing→resume none", .cancel: "pausing→cancel none cancelled", .pause: "pausing none",
                           .resume: "pausing→resume none", .answeredWithoutNetwork: "invalid", .transferPaused: "executing start(kept)",
                           .transferEnded: "completing deliver", .restorePaused: "pausing→resume refused", .restoreFinished: "pausing→resume refused", .handlersRan: "invalid"],
        "pausing→cancel": [.start: "pausing→cancel none cancelled", .cancel: "pausing→cancel none cancelled",
                           .pause: "pausing→cancel none cancelled", .resume: "pausing→cancel none cancelled",
                           .answeredWithoutNetwork: "invalid", .transferPaused: "completing completeCancelled cancelled",
                           .transferEnded: "completing deliverCancelled cancelled", .restorePaused: "pausing→cancel refused cancelled", .restoreFinished: "pausing→cancel refused cancelled",
                           .handlersRan: "invalid"],
        "paused": [.start: "paused none", .cancel: "completing completeCancelled cancelled", .pause: "paused none",
                   .resume: "executing start(kept)", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid",
                   .restorePaused: "paused refused", .restoreFinished: "paused refused", .handlersRan: "invalid"],
        "completing": [.start: "completing none", .cancel: "completing none", .pause: "completing none",
                       .resume: "completing none", .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid",
                       .restorePaused: "completing refused", .restoreFinished: "completing refused", .handlersRan: "finished finish"],
        "finished": [.start: "finished none", .cancel: "finished none", .pause: "finished none", .resume: "finished none",
                     .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid", .restorePaused: "finished refused", .restoreFinished: "finished refused",
                     .handlersRan: "finished none"],
        // Cancellation is part of the phase: it outlives the transfer's end and the finish.
        "completing·cancelled": [.start: "completing none cancelled", .cancel: "completing none cancelled",
                                 .pause: "completing none cancelled", .resume: "completing none cancelled",
                                 .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid", .restorePaused: "completing refused cancelled", .restoreFinished: "completing refused cancelled",
                                 .handlersRan: "finished finish cancelled"],
        "finished·cancelled": [.start: "finished none cancelled", .cancel: "finished none cancelled",
                               .pause: "finished none cancelled", .resume: "finished none cancelled",
                               .answeredWithoutNetwork: "invalid", .transferPaused: "invalid", .transferEnded: "invalid", .restorePaused: "finished refused cancelled", .restoreFinished: "finished refused cancelled",
                               .handlersRan: "finished none cancelled"],
    ]

    private static let kept = KeptDownload(point: ResumePoint(offset: 7, validator: "\"v\"", rangesSupported: true),
                                           bytes: Data([1, 2, 3, 4, 5, 6, 7]))

    /// Applies `event`; the action's label ("-" for events without one).
    private func apply(_ event: Event, to state: inout OperationState) -> String {
        switch event {
        case .start: return label(state.start())
        case .cancel: return label(state.cancel())
        case .pause: return label(state.pause())
        case .resume: return label(state.resume())
        case .answeredWithoutNetwork: return label(state.answeredWithoutNetwork(.failed(URLError(.resourceUnavailable))))
        case .transferPaused: return label(state.transferPaused(OperationStateTests.kept))
        case .transferEnded: return label(state.transferEnded())
        case .restorePaused: return state.restorePaused(OperationStateTests.kept) ? "-" : "refused"
        case .restoreFinished: return state.restoreFinished(cancelled: false) ? "-" : "refused"
        case .handlersRan: return label(state.handlersRan())
        }
    }

    private func label(_ action: OperationState.Action?) -> String {
        guard let action else { return "none" }
        switch action {
        case .startTransfer(let kept):
            guard let kept else { return "start(fresh)" }
            return kept.point.offset == 7 && kept.bytes.count == 7 ? "start(kept)" : "start(other bytes)"
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
        case .parked(let kept): return kept == nil ? "parked" : "parked+kept"
        case .startedParked: return "parked·started"
        case .cancelledParked: return "cancelledParked"
        case .executing: return "executing"
        case .intercepting(let kept): return kept == nil ? "intercepting" : "intercepting+kept"
        case .answering: return "answering"
        case .cancelling: return "cancelling"
        case .pausing(.stayPaused): return "pausing"
        case .pausing(.resume): return "pausing→resume"
        case .pausing(.cancel): return "pausing→cancel"
        case .paused: return "paused"
        case .completing: return "completing"
        case .finished: return "finished"
        }
    }

    private func state(in name: String) throws -> OperationState {
        var state = OperationState()
        for event in try XCTUnwrap(OperationStateTests.setups[name]) { _ = apply(event, to: &state) }
        let phase = name.replacingOccurrences(of: "·cancelled", with: "")
        XCTAssertEqual(label(state.phase), phase, "setup of \(name)")
        XCTAssertEqual(state.isCancelled, name.hasSuffix("·cancelled") || ["cancelledParked", "cancelling", "pausing→cancel"].contains(name),
                       "setup of \(name)")
        return state
    }

    /// Every (phase, event) pair of the table, each checked on a fresh state.
    /// A measured choice (bench/runs/cache-2026-12-08-round10.md): what every run's events pass along
    /// stays at most two words and a tag. Wider (a resume point or `Data` inline: `Action` was 81
    /// bytes), the compiler copies and drops it through the runtime's generic witnesses, each a type
    /// lookup and an indirect call.
    func testTheValuesEveryRunPassesAlongStayTwoWordsWide() {
        let twoWords = 2 * MemoryLayout<Int>.size + 1
        XCTAssertLessThanOrEqual(MemoryLayout<TransferOutcome>.size, twoWords, "an outcome's payload came back inline")
        XCTAssertLessThanOrEqual(MemoryLayout<OperationState.Action?>.size, twoWords, "an action's payload came back inline")
        XCTAssertLessThanOrEqual(MemoryLayout<OperationState.Phase>.size, twoWords, "a phase's payload came back inline")
        XCTAssertTrue((KeptDownload.self as Any.Type) is AnyClass, "the kept bytes became a value")
    }

    func testEveryPhaseAndEventPair() throws {
        XCTAssertEqual(OperationStateTests.table.count, OperationStateTests.setups.count)
        var checked = 0
        for (phase, row) in OperationStateTests.table.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(Set(row.keys), Set(Event.allCases), "row \(phase) names every event")
            for event in Event.allCases {
                let expected = try XCTUnwrap(row[event])
                guard expected != "invalid" else { continue }
                var state = try self.state(in: phase)
                let action = apply(event, to: &state)
                let got = "\(label(state.phase)) \(action)" + (state.isCancelled ? " cancelled" : "")
                XCTAssertEqual(got, expected, "\(phase) + \(event)")
                checked += 1
            }
        }
        XCTAssertEqual(checked, 116, "valid pairs checked")
    }

    /// The flags the operation's properties read, per phase.
    func testPropertiesOfEachPhase() throws {
        let expectations: [(String, executing: Bool, paused: Bool, finished: Bool, mayStart: Bool)] = [
            ("ready", false, false, false, true), ("parked", false, true, false, false),
            ("parked·started", false, true, false, true),
            ("parked+kept", false, true, false, true), ("cancelledParked", false, false, false, true),
            ("executing", true, false, false, true),
            ("answering", true, false, false, true),
            ("cancelling", true, false, false, true), ("pausing", false, true, false, true),
            ("pausing→resume", true, false, false, true), ("pausing→cancel", true, false, false, true),
            ("paused", false, true, false, true), ("completing", true, false, false, true),
            ("finished", false, false, true, true), ("completing·cancelled", true, false, false, true),
            ("finished·cancelled", false, false, true, true),
        ]
        for (name, executing, paused, finished, mayStart) in expectations {
            let state = try self.state(in: name)
            XCTAssertEqual(state.isExecuting, executing, "\(name).isExecuting")
            XCTAssertEqual(state.isPaused, paused, "\(name).isPaused")
            XCTAssertEqual(state.isFinished, finished, "\(name).isFinished")
            XCTAssertEqual(state.mayStart, mayStart, "\(name).mayStart")
            XCTAssertEqual(state.isPausing, name.hasPrefix("pausing"), "\(name).isPausing")
        }
    }

    /// Whether a cancel took effect is read from the phase alone: a state made from the phase of any
    /// row (no events behind it) says the same as the row's state.
    func testCancellationIsPartOfThePhase() throws {
        for name in OperationStateTests.setups.keys.sorted() {
            let state = try self.state(in: name)
            XCTAssertEqual(OperationState(phase: state.phase).isCancelled, state.isCancelled, name)
        }
        XCTAssertFalse(OperationState().isCancelled)
        XCTAssertTrue(OperationState(phase: .ready(cancelled: true)).isCancelled)
        XCTAssertTrue(OperationState(phase: .finished(cancelled: true)).isCancelled)
    }

    /// The kept bytes are consumed by the one continuation that takes them: a second pause keeps the
    /// second pause's bytes, never the first's.
    func testKeptBytesBelongToOnePause() {
        var state = OperationState()
        _ = state.start()
        _ = state.pause()
        _ = state.transferPaused(OperationStateTests.kept)
        guard case .startTransfer(let first?) = state.resume() else { return XCTFail("resume continues the kept bytes") }
        XCTAssertEqual(first.bytes.count, 7)
        _ = state.pause()
        let second = KeptDownload(point: ResumePoint(offset: 20, validator: nil, rangesSupported: true), bytes: Data(count: 20))
        _ = state.transferPaused(second)
        guard case .paused(let kept) = state.phase else { return XCTFail("paused again") }
        XCTAssertEqual(kept.point.offset, 20)
        XCTAssertEqual(kept.bytes.count, 20)
    }
}
