import Foundation
@testable import OperationNetworking
import XCTest

/// An operation whose `restore(from:)` also hands the decoder to `target`: the one way a caller has of
/// calling `restore(from:)` with a real archive's decoder on an operation of its choice.
final class RestoreRelayOperation: HTTPRequestOperation, @unchecked Sendable {   // `target` is behind its lock
    static let target = Protected<URLConnectionOperation?>(nil)

    override func restore(from coder: NSCoder) {
        super.restore(from: coder)
        RestoreRelayOperation.target.withLock { $0 }?.restore(from: coder)
    }
}

/// Every open method called on an operation in each phase does what its documentation says or nothing;
/// none stops the process (issue 58: `restore(from:)` with a paused archive on a started operation hit
/// a `preconditionFailure`). Every operation still ends afterwards.
final class OpenMethodsInEveryPhaseTests: ServerTestCase {
    private enum Phase: String, CaseIterable {
        case ready, executing, paused, finished, cancelled
    }

    /// The flags that tell the phase apart.
    private struct Flags: Equatable, CustomStringConvertible {
        var executing, paused, finished, cancelled: Bool
        init(_ operation: URLConnectionOperation) {
            (executing, paused, finished, cancelled) = (operation.isExecuting, operation.isPaused, operation.isFinished,
                                                        operation.isCancelled)
        }
        var description: String { "executing \(executing) paused \(paused) finished \(finished) cancelled \(cancelled)" }
    }

    private var pausedArchive = Data()
    private var finishedArchive = Data()

    override func setUpWithError() throws {
        try super.setUpWithError()
        let paused = RestoreRelayOperation(request: request("/bytes/400000?chunkSize=1024&chunkDelayMs=2"))
        startThenPause(paused)
        pausedArchive = try SafeArchive.archive(paused)
        paused.cancel()
        let finished = RestoreRelayOperation(request: request("/bytes/3000"))
        XCTAssertTrue(run(finished).isSuccess)
        finished.waitUntilFinished()
        finishedArchive = try SafeArchive.archive(finished)
    }

    override func tearDown() {
        // XCTest keeps every test case until the process ends, and LeakSanitizer cannot follow a
        // `Data` kept in it (its storage pointer sits in an enum payload): let the archives go now.
        pausedArchive = Data()
        finishedArchive = Data()
        super.tearDown()
    }

    /// An operation in `phase`.
    private func operation(in phase: Phase) -> HTTPRequestOperation {
        switch phase {
        case .ready:
            return HTTPRequestOperation(request: request("/bytes/3000"))
        case .executing:
            let operation = HTTPRequestOperation(request: request("/stall"))
            startAndAwaitBytes(operation, atLeast: 100)
            return operation
        case .paused:
            let operation = HTTPRequestOperation(request: request("/bytes/400000?chunkSize=1024&chunkDelayMs=2"))
            startThenPause(operation)
            return operation
        case .finished:
            let operation = HTTPRequestOperation(request: request("/bytes/3000"))
            XCTAssertTrue(run(operation).isSuccess)
            operation.waitUntilFinished()   // the handlers ran; the finish follows them
            return operation
        case .cancelled:
            let operation = HTTPRequestOperation(request: request("/bytes/3000"))
            operation.cancel()
            return operation
        }
    }

    /// Starts `operation` and pauses it once some of its body arrived.
    private func startThenPause(_ operation: HTTPRequestOperation) {
        let paused = expectation(forNotification: .operationDidFinish, object: operation)
        startAndAwaitBytes(operation, atLeast: 20_000)
        operation.pause()
        wait(for: [paused], timeout: 10)
        XCTAssertTrue(operation.isPaused)
    }

    /// Restores `archive` onto `target` through the relay's decoder.
    private func restore(_ archive: Data, onto target: URLConnectionOperation) throws {
        RestoreRelayOperation.target.withLock { $0 = target }
        defer { RestoreRelayOperation.target.withLock { $0 = nil } }
        _ = try SafeArchive.unarchive(RestoreRelayOperation.self, from: archive)
    }

    /// Waits, off the callback queue and bounded, for `operation` to finish after it was cancelled and
    /// started (which ends any phase: a started operation ignores the start).
    private func assertEnds(_ operation: HTTPRequestOperation, _ context: String) {
        let returned = expectation(description: "waitUntilFinished returned (\(context))")
        DispatchQueue.global().async {
            operation.waitUntilFinished()
            returned.fulfill()
        }
        operation.cancel()
        operation.start()
        operation.resume()
        wait(for: [returned], timeout: 10)
        XCTAssertTrue(operation.isFinished, context)
    }

    func testRestoreFromAnArchiveChangesNothingOnceAnythingHappened() throws {
        for phase in Phase.allCases {
            for (name, archive) in [("paused", pausedArchive), ("finished", finishedArchive)] {
                let operation = operation(in: phase)
                let (before, data, status) = (Flags(operation), operation.responseData, operation.response?.statusCode)
                try restore(archive, onto: operation)
                let context = "\(name) archive onto a \(phase) operation"
                if phase == .ready {
                    XCTAssertEqual(operation.isPaused, name == "paused", context)
                    XCTAssertEqual(operation.isFinished, name == "finished", context)
                } else {
                    XCTAssertEqual(Flags(operation), before, context)
                    XCTAssertEqual(operation.responseData, data, context)
                    XCTAssertEqual(operation.response?.statusCode, status, context)
                }
                assertEnds(operation, context)
            }
        }
    }

    func testLifecycleCallsInEveryPhase() throws {
        typealias Call = (name: String, apply: (HTTPRequestOperation) -> Void, unchangedIn: Set<Phase>)
        let calls: [Call] = [
            ("start", { $0.start() }, [.executing, .paused, .finished]),
            ("cancel", { $0.cancel() }, [.finished, .cancelled]),
            ("pause", { $0.pause() }, [.paused, .finished, .cancelled]),
            ("resume", { $0.resume() }, [.ready, .executing, .finished, .cancelled]),
        ]
        for phase in Phase.allCases {
            for call in calls {
                let operation = operation(in: phase)
                let before = Flags(operation)
                call.apply(operation)
                let context = "\(call.name) on a \(phase) operation"
                if call.unchangedIn.contains(phase) { XCTAssertEqual(Flags(operation), before, context) }
                assertEnds(operation, context)
            }
        }
    }

    func testArchiveCopyWaitAndSettersInEveryPhase() throws {
        for phase in Phase.allCases {
            let operation = operation(in: phase)
            let before = Flags(operation)
            // Archiving pauses an executing operation first (AFN); it changes nothing in another phase.
            let archive = try SafeArchive.archive(operation)
            XCTAssertNoThrow(try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive), "\(phase)")
            if phase == .executing {
                XCTAssertTrue(operation.isPaused, "archiving an executing operation pauses it")
            } else {
                XCTAssertEqual(Flags(operation), before, "archiving a \(phase) operation")
            }
            let copy = try XCTUnwrap(operation.copy() as? HTTPRequestOperation)
            XCTAssertFalse(copy.isFinished || copy.isExecuting || copy.isPaused, "a copy is new, whatever the phase")
            let flags = Flags(operation)
            operation.completionQueue = DispatchQueue(label: "other")
            operation.completionGroup = DispatchGroup()
            operation.credential = URLCredential(user: "u", password: "p", persistence: .none)
            operation.securityPolicy = SecurityPolicy.default()
            operation.userInfo = ["k": "v"]
            operation.maximumResponseSize = 1 << 20
            operation.urlCache = nil
            operation.inputStream = InputStream(data: Data())
            operation.responseSerializer = JSONResponseSerializer()
            operation.setDownloadProgressBlock { _, _, _ in }
            operation.setUploadProgressBlock { _, _, _ in }
            operation.setRedirectResponseBlock { _, request, _ in request }
            operation.setCompletionBlockWithSuccess({ _, _ in }, failure: { _, _ in })
            operation.completionBlock = {}
            XCTAssertEqual(Flags(operation), flags, "setters on a \(phase) operation")
            assertEnds(operation, "\(phase) operation after archive, copy and setters")
            assertEnds(copy, "copy of a \(phase) operation")
        }
    }
}
