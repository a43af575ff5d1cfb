import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Pause keeps the bytes; resume continues with a Range request, or restarts cleanly.
final class PauseResumeTests: ServerTestCase {
    private let size = 400_000

    /// Starts a slow download and pauses it once some bytes arrived; returns the operation and the
    /// expectation its handlers fulfil.
    private func startAndPause(_ path: String) -> (HTTPRequestOperation, XCTestExpectation, OutcomeBox) {
        let operation = HTTPRequestOperation(request: request(path))
        let (done, box) = startAndPause(operation)
        return (operation, done, box)
    }

    func testResumeContinuesWithRangeAndIfRange() throws {
        let (operation, done, box) = startAndPause("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5")
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        let offset = try XCTUnwrap(operation.resumePointForTesting?.offset)
        XCTAssertGreaterThan(offset, 0)
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertEqual(operation.responseData, deterministicBytes(size))
        let resumed = try XCTUnwrap(server.requests.last)
        XCTAssertEqual(server.requests.count, 2)
        XCTAssertEqual(resumed.header("Range"), "bytes=\(offset)-")
        XCTAssertEqual(resumed.header("If-Range"), "\"bytes-\(size)\"")
        XCTAssertEqual(operation.response?.statusCode, 206)
        XCTAssertTrue(eventually { operation.isFinished })
    }

    func testServerIgnoringRangesRestartsFromZero() throws {
        let (operation, done, box) = startAndPause("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5&ignoreRange=1")
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertNil(server.requests.last?.header("Range"), "no Range without Accept-Ranges")
        XCTAssertEqual(operation.responseData, deterministicBytes(size), "no duplicated prefix")
    }

    func testA200AnswerToARangeRequestRestartsFromZero() throws {
        // The validator changes between the two requests, so the server answers If-Range with a full 200.
        let (operation, done, box) = startAndPause("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5")
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        operation.resumePointForTesting?.validator = "\"stale\""
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertTrue(box.value?.isSuccess ?? false)
        XCTAssertEqual(server.requests.last?.header("If-Range"), "\"stale\"")
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertEqual(operation.responseData, deterministicBytes(size))
    }

    func testResumeToAFileContinuesTheFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let operation = HTTPRequestOperation(request: request("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5"))
        operation.outputStream = OutputStream(toFileAtPath: path, append: false)
        let someBytes = expectation(description: "some bytes")
        someBytes.assertForOverFulfill = false
        operation.setDownloadProgressBlock { _, total, _ in if total >= 20_000 { someBytes.fulfill() } }
        let done = expectation(description: "done")
        operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, error in
            XCTFail("\(error)")
            done.fulfill()
        })
        operation.start()
        wait(for: [someBytes], timeout: 5)
        operation.pause()
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        operation.resume()
        wait(for: [done], timeout: 20)
        XCTAssertNotNil(server.requests.last?.header("Range"))
        XCTAssertEqual(FileManager.default.contents(atPath: path), deterministicBytes(size))
    }

    func testCancellingAPausedOperationFinishesIt() {
        let (operation, done, box) = startAndPause("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5")
        operation.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled)
        XCTAssertTrue(eventually { operation.isFinished })
    }

    func testPausedOperationKeepsItsQueueSlot() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let first = HTTPRequestOperation(request: request("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5"))
        let someBytes = expectation(description: "some bytes")
        someBytes.assertForOverFulfill = false
        first.setDownloadProgressBlock { _, total, _ in if total >= 20_000 { someBytes.fulfill() } }
        let firstDone = expectation(description: "first")
        first.setCompletionBlockWithSuccess({ _, _ in firstDone.fulfill() }, failure: nil)
        let second = HTTPRequestOperation(request: request("/echo"))
        let secondDone = expectation(description: "second")
        second.setCompletionBlockWithSuccess({ _, _ in secondDone.fulfill() }, failure: nil)
        queue.addOperations([first, second], waitUntilFinished: false)
        wait(for: [someBytes], timeout: 5)
        first.pause()
        let hold = expectation(description: "hold")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { hold.fulfill() }
        wait(for: [hold], timeout: 2)
        XCTAssertEqual(server.requests(path: "/echo").count, 0, "the paused operation still holds the only slot")
        first.resume()
        wait(for: [firstDone, secondDone], timeout: 20, enforceOrder: true)
    }

    func testPauseBeforeStartParksTheOperation() {
        let queue = OperationQueue()
        let operation = HTTPRequestOperation(request: request("/echo"))
        operation.pause()
        XCTAssertTrue(operation.isPaused)
        XCTAssertFalse(operation.isReady)
        let done = expectation(description: "done")
        operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: nil)
        queue.addOperation(operation)
        let hold = expectation(description: "hold")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { hold.fulfill() }
        wait(for: [hold], timeout: 2)
        XCTAssertTrue(server.requests.isEmpty)
        operation.resume()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(server.requests.count, 1)
    }

    /// Puts `operation` in a queue whose dispatch of its `start()` is held back, pauses it, then lets
    /// that `start()` run, on a parked operation: corelibs' queue reads an operation's readiness, runs
    /// its `start()` later on the queue's dispatch queue, and never starts it twice. Returns the queue
    /// and its dispatch queue (`underlyingQueue` is `unowned(unsafe)`: the caller keeps it alive).
    private func pauseAfterItsQueueDispatchedIt(_ operation: HTTPRequestOperation)
        -> (queue: OperationQueue, underlying: DispatchQueue) {
        let gate = DispatchSemaphore(value: 0)
        let underlying = DispatchQueue(label: "held start")
        underlying.async { gate.wait() }
        let queue = OperationQueue()
        queue.underlyingQueue = underlying
        queue.addOperation(operation)   // read ready, dispatched: its start() waits behind the gate
        operation.pause()
        gate.signal()
        underlying.sync {}   // the held start() ran, on a parked operation
        return (queue, underlying)
    }

    /// The race the interleaving test found (seed 1072): the queue dispatched `start()`, a `pause()`
    /// landed before it ran, and the start met a parked operation. `resume()` must still run it.
    func testResumeRunsAnOperationPausedAfterItsQueueDispatchedIt() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let (done, box) = recordOutcome(of: operation)
        let (queue, underlying) = pauseAfterItsQueueDispatchedIt(operation)
        XCTAssertTrue(operation.isPaused)
        XCTAssertFalse(operation.isExecuting)
        XCTAssertTrue(server.requests.isEmpty, "nothing is sent while it is paused")
        operation.resume()
        wait(for: [done], timeout: 5)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(server.requests(path: "/echo").count, 1)
        XCTAssertTrue(eventually { operation.isFinished && queue.operationCount == 0 })
        withExtendedLifetime(underlying) {}
    }

    /// The same race ended by `cancel()`: the operation finishes cancelled, sends nothing and frees its
    /// queue slot.
    func testCancelFinishesAnOperationPausedAfterItsQueueDispatchedIt() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let (done, box) = recordOutcome(of: operation)
        let (queue, underlying) = pauseAfterItsQueueDispatchedIt(operation)
        operation.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled)
        XCTAssertTrue(operation.isCancelled)
        XCTAssertTrue(eventually { operation.isFinished && queue.operationCount == 0 })
        XCTAssertTrue(server.requests.isEmpty)
        withExtendedLifetime(underlying) {}
    }

    /// Without a queue: paused, then started by hand, it sends nothing until `resume()` runs it.
    func testAnOperationStartedByHandWhilePausedRunsOnResume() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let (done, box) = recordOutcome(of: operation)
        operation.pause()
        operation.start()
        XCTAssertTrue(operation.isPaused)
        XCTAssertFalse(operation.isExecuting)
        XCTAssertTrue(server.requests.isEmpty)
        operation.resume()
        wait(for: [done], timeout: 5)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(server.requests(path: "/echo").count, 1)
    }

    func testPausingAFinishedOperationDoesNothing() {
        let (operation, outcome) = run(request("/echo"))
        XCTAssertTrue(outcome.isSuccess)
        XCTAssertTrue(eventually { operation.isFinished })
        operation.pause()
        XCTAssertFalse(operation.isPaused)
        XCTAssertTrue(operation.isFinished)
    }
}

extension URLConnectionOperation {
    /// The resume point of a paused operation's kept bytes, for tests.
    var resumePointForTesting: ResumePoint? {
        get { keptDownloadForTesting?.point }
        set {
            guard let newValue else { return }
            // Plays a resource that changed while paused: the same phase, its kept point replaced.
            state.withLock { state in
                switch state.lifecycle.phase {
                case .paused(let kept):
                    state.lifecycle = OperationState(phase: .paused(KeptDownload(point: newValue, bytes: kept.bytes)))
                case .parked(let kept?):
                    state.lifecycle = OperationState(phase: .parked(KeptDownload(point: newValue, bytes: kept.bytes)))
                case .ready, .parked(nil), .startedParked, .cancelledParked, .executing, .intercepting, .answering, .cancelling,
                     .pausing, .completing, .finished:
                    return
                }
            }
        }
    }

    /// The kept bytes of a paused operation, for tests (`nil` when it keeps none).
    var keptDownloadForTesting: KeptDownload? {
        state.withLock {
            switch $0.lifecycle.phase {
            case .paused(let kept), .parked(let kept?): return kept
            case .ready, .parked(nil), .startedParked, .cancelledParked, .executing, .intercepting, .answering, .cancelling,
                 .pausing, .completing, .finished: return nil
            }
        }
    }
}
