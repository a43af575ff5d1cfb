import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The five lifecycle defects of issue 21, each on the wire against the loopback server: a cancel
/// made back to back with pause and resume, a second pause archived, blocks set while running, no
/// request after its cancel returned, and never a success with `isCancelled` true.
final class LifecycleWireTests: ServerTestCase {
    /// 100 KiB in 2,560-byte chunks 40 ms apart: about 1.6 s, honouring Range on every continuation.
    private let slowPath = "/bytes/102400?chunkSize=2560&chunkDelayMs=40"
    private let size = 102_400

    private func cancelsPromptly(after calls: (HTTPRequestOperation) -> Void, file: StaticString = #filePath,
                                 line: UInt = #line) {
        let operation = HTTPRequestOperation(request: request(slowPath))
        let (done, box) = recordOutcome(of: operation)
        let succeeded = expectation(description: "success never runs")
        succeeded.isInverted = true
        startAndAwaitBytes(operation, atLeast: 5_000)
        let started = Date()
        calls(operation)
        wait(for: [done], timeout: 5)
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled, file: file, line: line)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.0, "promptly, not at the download's end", file: file, line: line)
        XCTAssertTrue(operation.isCancelled, file: file, line: line)
        XCTAssertNil(operation.responseData, file: file, line: line)
        XCTAssertTrue(eventually { operation.isFinished }, file: file, line: line)
        if case .success = box.value { succeeded.fulfill() }
        wait(for: [succeeded], timeout: 0.1)
    }

    func testCancelRightAfterPauseAndResumeWins() {
        cancelsPromptly { operation in
            operation.pause()
            operation.resume()
            operation.cancel()
        }
    }

    func testCancelRightAfterPauseWins() {
        cancelsPromptly { operation in
            operation.pause()
            operation.cancel()
        }
    }

    func testCancelAfterPauseResumePauseWins() {
        cancelsPromptly { operation in
            operation.pause()
            operation.resume()
            operation.pause()
            operation.cancel()
        }
    }

    /// Pause, resume, 20 KB more, pause, archive at once, restore, resume: the restored download ends
    /// with every byte, and on the wire it continues exactly where the second pause left off.
    func testASecondPauseArchivedResumesToTheExactBody() throws {
        let operation = HTTPRequestOperation(request: request(slowPath))
        let (originalDone, _) = startAndPause(operation)
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        let first = try XCTUnwrap(operation.resumePointForTesting?.offset)
        let more = expectation(description: "20 KB more")
        more.assertForOverFulfill = false
        operation.setDownloadProgressBlock { _, total, _ in if total >= first + 20_000 { more.fulfill() } }
        operation.resume()
        wait(for: [more], timeout: 10)
        operation.pause()
        let archive = try SafeArchive.archive(operation)
        operation.cancel()
        wait(for: [originalDone], timeout: 5)

        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive)
        let second = try XCTUnwrap(restored.resumePointForTesting?.offset, "archived paused, with its kept bytes")
        XCTAssertGreaterThanOrEqual(second, first + 20_000)
        let (done, box) = recordOutcome(of: restored)
        restored.resume()
        wait(for: [done], timeout: 20)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(restored.responseData?.count, size)
        XCTAssertEqual(restored.responseData, deterministicBytes(size))
        XCTAssertEqual(server.requests.last?.header("Range"), "bytes=\(second)-")
    }

    /// Paused right after start (before any byte), archived, cancelled; the restored copy resumes and
    /// downloads the whole body.
    func testAnOperationPausedAtOnceArchivesAndRestoresToTheWholeBody() throws {
        let operation = HTTPRequestOperation(request: request(slowPath))
        let (originalDone, _) = recordOutcome(of: operation)
        operation.start()
        operation.pause()
        let archive = try SafeArchive.archive(operation)
        operation.cancel()
        wait(for: [originalDone], timeout: 5)
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive)
        let (done, box) = recordOutcome(of: restored)
        if restored.isPaused { restored.resume() } else { restored.start() }
        wait(for: [done], timeout: 10)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(restored.responseData, deterministicBytes(size))
    }

    /// A cancelled operation archived and restored comes back finished and cancelled, with its error
    /// (as AFN archived a finished operation); its `copy()` runs again and reports the new run's
    /// outcome, not the archived error.
    func testARestoredCancelledOperationComesBackCancelledAndItsCopyRunsAgain() throws {
        let operation = HTTPRequestOperation(request: request("/echo"))
        operation.cancel()
        run(operation)
        XCTAssertEqual((operation.error as? URLError)?.code, .cancelled)
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: try SafeArchive.archive(operation))
        XCTAssertEqual((restored.error as NSError?)?.code, NSURLErrorCancelled, "the archived error comes back with it")
        XCTAssertTrue(restored.isCancelled)
        let again = try XCTUnwrap(restored.copy() as? HTTPRequestOperation)
        let outcome = run(again)
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertNil(again.error)
        XCTAssertEqual(server.requests(path: "/echo").count, 1)
    }

    /// AFN's everyday pattern: the operation is already running when its progress block is set.
    func testAProgressBlockSetWhileRunningIsCalled() {
        let operation = HTTPRequestOperation(request: request(slowPath))
        let (done, box) = recordOutcome(of: operation)
        operation.start()
        XCTAssertTrue(eventually { [server = server!] in server.requests.count == 1 })
        let totals = Recorder<Int64>()
        operation.setDownloadProgressBlock { _, total, _ in totals.append(total) }
        wait(for: [done], timeout: 10)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertGreaterThan(totals.count, 0, "the block set while running was called")
        XCTAssertEqual(totals.all.last, Int64(size), "progress delivered before the handlers ran")
    }

    /// A block replaced while running: the new one is called from then on, the old one no more.
    func testAProgressBlockReplacedWhileRunningTakesOver() {
        let operation = HTTPRequestOperation(request: request(slowPath))
        let (done, _) = recordOutcome(of: operation)
        let old = Recorder<Int64>()
        let replaced = expectation(description: "old block called")
        replaced.assertForOverFulfill = false
        operation.setDownloadProgressBlock { _, total, _ in
            old.append(total)
            replaced.fulfill()
        }
        operation.start()
        wait(for: [replaced], timeout: 5)
        let new = Recorder<Int64>()
        operation.setDownloadProgressBlock { _, total, _ in new.append(total) }
        let oldCalls = old.count
        wait(for: [done], timeout: 10)
        XCTAssertLessThanOrEqual(old.count, oldCalls + 1, "at most a delivery already under way")
        XCTAssertEqual(new.all.last, Int64(size))
    }

    /// Success and failure blocks set after the operation started are the ones that run.
    func testCompletionBlocksSetWhileRunningRun() {
        let operation = HTTPRequestOperation(request: request(slowPath))
        operation.start()
        XCTAssertTrue(eventually { [server = server!] in server.requests.count == 1 })
        let (done, box) = recordOutcome(of: operation)
        wait(for: [done], timeout: 10)
        XCTAssertTrue(box.value?.isSuccess ?? false)
    }

    /// Starts `operation` on a held (suspended) completion queue and returns that queue once the
    /// transfer's end reached the operation: its handler hop then waits until the caller resumes it.
    private func startWithHandlersHeld(_ operation: HTTPRequestOperation,
                                       file: StaticString = #filePath, line: UInt = #line) -> DispatchQueue {
        let held = DispatchQueue(label: "held completion queue")
        operation.completionQueue = held
        held.suspend()
        operation.start()
        XCTAssertTrue(eventually { operation.state.withLock { $0.lifecycle.hasEnded && !$0.lifecycle.isFinished } }, "the transfer's end reached the operation; its handler waits on the held queue", file: file, line: line)
        return held
    }

    /// Handlers set after the transfer ended, before they ran, are the ones that run — whether or not
    /// the operation had any when its transfer ended.
    func testHandlersSetAfterTheTransferEndedAreTheOnesThatRun() {
        for hadHandlers in [true, false] {
            let (calls, _) = handlersSetAfterTheEnd(of: "/echo", hadHandlers: hadHandlers)
            XCTAssertEqual(calls, ["new success"], "had handlers at the end: \(hadHandlers)")
        }
    }

    /// A response that fails validation reaches `failure` even when the handlers were set after the
    /// transfer ended (so nothing was serialized then): validation is part of `error`, as in AFN 2.x,
    /// whose completion block reads `error` again after `responseObject`.
    func testHandlersSetAfterTheEndOfAFailedResponseGetTheValidationError() {
        for hadHandlers in [true, false] {
            let (calls, operation) = handlersSetAfterTheEnd(of: "/status/404", hadHandlers: hadHandlers)
            XCTAssertEqual(calls, ["new failure \(NSURLErrorBadServerResponse)"], "had handlers at the end: \(hadHandlers)")
            XCTAssertEqual(operation.response?.statusCode, 404)
        }
    }

    /// A response serializer replaced after the transfer ended (which drops what the old one made)
    /// validates the response before the handlers run: its rejection reaches `failure`.
    func testASerializerReplacedAfterTheEndValidatesBeforeTheHandlersRun() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let calls = Recorder<String>()
        let done = expectation(description: "handler")
        operation.setCompletionBlockWithSuccess({ _, _ in
            calls.append("success")
            done.fulfill()
        }, failure: { _, error in
            calls.append("failure \((error as NSError).code)")
            done.fulfill()
        })
        let held = startWithHandlersHeld(operation)
        let strict = HTTPResponseSerializer()
        strict.acceptableStatusCodes = IndexSet(integer: 201)
        operation.responseSerializer = strict
        held.resume()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(calls.all, ["failure \(NSURLErrorBadServerResponse)"])
        XCTAssertEqual(operation.response?.statusCode, 200)
    }

    /// Runs a GET of `path` whose handlers are replaced after its transfer ended and before they ran
    /// (with `hadHandlers`, it had recording ones at the end); returns which handlers ran and the operation.
    private func handlersSetAfterTheEnd(of path: String, hadHandlers: Bool) -> ([String], HTTPRequestOperation) {
        let operation = HTTPRequestOperation(request: request(path))
        let calls = Recorder<String>()
        if hadHandlers {
            operation.setCompletionBlockWithSuccess({ _, _ in calls.append("old success") },
                                                    failure: { _, _ in calls.append("old failure") })
        }
        let held = startWithHandlersHeld(operation)
        let done = expectation(description: "new handler")
        operation.setCompletionBlockWithSuccess({ _, object in
            calls.append(object == nil ? "new success, no object" : "new success")
            done.fulfill()
        }, failure: { _, error in
            calls.append("new failure \((error as NSError).code)")
            done.fulfill()
        })
        held.resume()
        wait(for: [done], timeout: 5)
        return (calls.all, operation)
    }

    /// A cancel that lands after the response reached the operation changes nothing: success runs
    /// and `isCancelled` stays false.
    func testACancelAfterTheResponseArrivedChangesNothing() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let sawCancelled = Recorder<Bool>()
        let done = expectation(description: "handler")
        operation.setCompletionBlockWithSuccess({ operation, _ in
            sawCancelled.append(operation.isCancelled)
            done.fulfill()
        }, failure: { operation, _ in
            sawCancelled.append(operation.isCancelled)
            done.fulfill()
        })
        let held = startWithHandlersHeld(operation)
        operation.cancel()
        XCTAssertFalse(operation.isCancelled)
        held.resume()
        wait(for: [done], timeout: 5)
        XCTAssertNil(operation.error)
        XCTAssertEqual(sawCancelled.all, [false])
    }

    /// A cancel that returns before the operation learned of its transfer's end wins, even when the
    /// transfer had already completed on the network thread: failure with `.cancelled`, never success.
    func testACancelBeforeTheEndReachedTheOperationWins() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let (done, box) = recordOutcome(of: operation)
        CallbackQueues.delivery.suspend()
        operation.start()
        // The exchange is over on the network thread; its end waits on the held delivery queue.
        XCTAssertTrue(eventually { [server = server!] in
            server.requests.count == 1 && NetworkThread.shared.statistics.active == 0
                && NetworkThread.shared.statistics.waiting == 0
        })
        operation.cancel()
        XCTAssertTrue(operation.isCancelled)
        CallbackQueues.delivery.resume()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled)
        XCTAssertNil(operation.responseData)
    }
}
