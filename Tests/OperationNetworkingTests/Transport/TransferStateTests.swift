import Foundation
@testable import OperationNetworking
import XCTest

/// `TransferState` alone, no curl and no server: one row per (phase, event) pair, the new phase and
/// the action. Pairs marked `invalid` are library bugs that stop the process (`preconditionFailure`);
/// they are listed so the table is complete, and never run.
final class TransferStateTests: LibraryTestCase {
    private enum Event: String, CaseIterable {
        case takeIn, admit, delay, wake, finish
    }

    /// How each phase of the table is reached from a new state.
    private static let setups: [String: [Event]] = [
        "created": [],
        "waiting": [.takeIn],
        "active": [.takeIn, .admit],
        "delaying": [.takeIn, .admit, .delay],
        "finished": [.finish],
    ]

    /// `phase action`, or `invalid`.
    private static let table: [String: [Event: String]] = [
        "created": [.takeIn: "waiting proceed", .admit: "invalid", .delay: "invalid", .wake: "invalid",
                    .finish: "finished end"],
        "waiting": [.takeIn: "invalid", .admit: "active proceed", .delay: "invalid", .wake: "invalid",
                    .finish: "finished end"],
        "active": [.takeIn: "invalid", .admit: "invalid", .delay: "delaying releaseHandle", .wake: "invalid",
                   .finish: "finished end"],
        "delaying": [.takeIn: "invalid", .admit: "invalid", .delay: "invalid", .wake: "waiting beginNextAttempt",
                     .finish: "finished end"],
        // A cancel or pause from another thread ends a transfer wherever it is: a take-in or a retry's
        // wake-up that comes after it finds it finished and does nothing.
        "finished": [.takeIn: "finished ignore", .admit: "invalid", .delay: "invalid", .wake: "finished ignore",
                     .finish: "finished ignore"],
    ]

    private func apply(_ event: Event, to state: inout TransferState) -> TransferState.Action {
        switch event {
        case .takeIn: return state.takeIn()
        case .admit: return state.admit()
        case .delay: return state.delay(until: 42)
        case .wake: return state.wake()
        case .finish: return state.finish()
        }
    }

    private func state(in name: String) throws -> TransferState {
        var state = TransferState()
        for event in try XCTUnwrap(TransferStateTests.setups[name]) { _ = apply(event, to: &state) }
        XCTAssertEqual(state.phase.description, name, "setup of \(name)")
        return state
    }

    /// Every (phase, event) pair of the table, each checked on a fresh state.
    func testEveryPhaseAndEventPair() throws {
        XCTAssertEqual(TransferStateTests.table.count, TransferStateTests.setups.count)
        var checked = 0
        for (phase, row) in TransferStateTests.table.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(Set(row.keys), Set(Event.allCases), "row \(phase) names every event")
            for event in Event.allCases {
                let expected = try XCTUnwrap(row[event])
                guard expected != "invalid" else { continue }
                var state = try self.state(in: phase)
                let action = apply(event, to: &state)
                XCTAssertEqual("\(state.phase) \(action)", expected, "\(phase) + \(event)")
                checked += 1
            }
        }
        XCTAssertEqual(checked, 11, "valid pairs checked")
    }

    /// The delay keeps the time the next attempt is due; the trace keeps the phases in order.
    func testDelayKeepsItsDueTimeAndTheTraceItsPhases() {
        var state = TransferState()
        _ = state.takeIn()
        _ = state.admit()
        _ = state.delay(until: 1_234)
        XCTAssertEqual(state.phase, .delaying(until: 1_234))
        _ = state.wake()
        _ = state.finish()
        #if DEBUG
        XCTAssertEqual(state.trace, ["created", "waiting", "active", "delaying", "waiting", "finished"])
        #endif
    }
}
