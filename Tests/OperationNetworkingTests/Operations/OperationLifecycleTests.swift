import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The operation model: dependencies, handlers before finish, cancel, queue control, notifications.
final class OperationLifecycleTests: ServerTestCase {
    func testDependentStartsAfterDependencysSuccessBlockReturned() {
        let events = Recorder<String>()
        let first = HTTPRequestOperation(request: request("/delay/50"))
        let second = HTTPRequestOperation(request: request("/echo"))
        let done = expectation(description: "second done")
        let server = self.server!
        let requestsSeenAtHandlerEnd = Recorder<Int>()
        first.setCompletionBlockWithSuccess({ _, _ in
            events.append("first success begins")
            Thread.sleep(forTimeInterval: 0.05)   // a slow handler: the dependent must still wait for it
            requestsSeenAtHandlerEnd.append(server.requests.count)
            events.append("first success ends")
        }, failure: nil)
        second.setCompletionBlockWithSuccess({ _, _ in
            events.append("second success")
            done.fulfill()
        }, failure: nil)
        let observer = NotificationCenter.default.addObserver(forName: .operationDidStart, object: second, queue: nil) { _ in
            events.append("second started")
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        second.addDependency(first)
        let queue = OperationQueue()
        queue.addOperations([second, first], waitUntilFinished: false)
        wait(for: [done], timeout: 10)
        XCTAssertEqual(Array(events.all.prefix(2)), ["first success begins", "first success ends"])
        XCTAssertEqual(requestsSeenAtHandlerEnd.all, [1], "the dependent was not sent while the handler ran")
        XCTAssertTrue(first.isFinished)
        XCTAssertEqual(server.requests.map(\.path), ["/delay/50", "/echo"])
    }

    func testCancelBeforeStartSendsNothingAndCallsFailure() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let failed = expectation(description: "failure")
        operation.setCompletionBlockWithSuccess({ _, _ in XCTFail("success after cancel") }, failure: { _, error in
            XCTAssertEqual((error as? URLError)?.code, .cancelled)
            failed.fulfill()
        })
        operation.cancel()
        let queue = OperationQueue()
        queue.addOperation(operation)
        wait(for: [failed], timeout: 5)
        XCTAssertTrue(eventually { operation.isFinished })
        XCTAssertTrue(operation.isCancelled)
        XCTAssertTrue(server.requests.isEmpty)
        XCTAssertEqual((operation.error as? URLError)?.code, .cancelled)
    }

    func testCancelDuringTransferFinishesPromptly() {
        let operation = HTTPRequestOperation(request: request("/bytes/1000000?chunkSize=1000&chunkDelayMs=20"))
        let received = expectation(description: "first bytes")
        received.assertForOverFulfill = false
        operation.setDownloadProgressBlock { _, _, _ in received.fulfill() }
        let failed = expectation(description: "failure")
        let finishedAt = Recorder<Date>()
        operation.setCompletionBlockWithSuccess(nil, failure: { _, error in
            finishedAt.append(Date())
            XCTAssertEqual((error as? URLError)?.code, .cancelled)
            failed.fulfill()
        })
        operation.start()
        wait(for: [received], timeout: 5)
        let cancelledAt = Date()
        operation.cancel()
        wait(for: [failed], timeout: 5)
        let elapsed = finishedAt.all.first.map { $0.timeIntervalSince(cancelledAt) } ?? 99
        XCTAssertLessThan(elapsed, 0.1)
        XCTAssertTrue(eventually { operation.isFinished })
        XCTAssertNil(operation.responseData, "AFN: no data after a cancel")
        let server = self.server!
        XCTAssertTrue(eventually { server.openConnections == 0 }, "the cancelled connection was closed")
    }

    func testSuspendedQueueHoldsRequestsBack() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        queue.isSuspended = true
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = 6
        for index in 0..<6 {
            let operation = HTTPRequestOperation(request: request("/echo?i=\(index)"))
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: nil)
            queue.addOperation(operation)
        }
        let nothingYet = expectation(description: "still suspended")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { nothingYet.fulfill() }
        wait(for: [nothingYet], timeout: 2)
        XCTAssertTrue(server.requests.isEmpty)
        XCTAssertEqual(queue.operationCount, 6)
        queue.isSuspended = false
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.requests.count, 6)
    }

    func testMaxConcurrencyLimitsRequestsInFlight() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = 3
        for _ in 0..<3 {
            let operation = HTTPRequestOperation(request: request("/delay/30"))
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: nil)
            queue.addOperation(operation)
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(server.acceptedConnections, 1, "one at a time needs one connection")
    }

    func testCancelAllOperationsCancelsRunningAndPending() {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let failed = expectation(description: "all cancelled")
        failed.expectedFulfillmentCount = 5
        let codes = Recorder<URLError.Code>()
        for _ in 0..<5 {
            let operation = HTTPRequestOperation(request: request("/delay/2000"))
            operation.setCompletionBlockWithSuccess(nil, failure: { _, error in
                codes.append((error as? URLError)?.code ?? .unknown)
                failed.fulfill()
            })
            queue.addOperation(operation)
        }
        let server = self.server!
        XCTAssertTrue(eventually { server.requests.count == 1 })
        // Foundation cancels in queue order, the running operation first, and the queue may start the
        // next one before the call reaches it: suspended, the queue starts none until all are cancelled.
        queue.isSuspended = true
        queue.cancelAllOperations()
        queue.isSuspended = false
        wait(for: [failed], timeout: 5)
        XCTAssertEqual(codes.all, Array(repeating: .cancelled, count: 5))
        XCTAssertTrue(eventually { queue.operationCount == 0 })
        XCTAssertEqual(server.requests.count, 1)
    }

    func testNotificationsAreDeliveredOffTheNetworkThread() {
        let operation = URLConnectionOperation(request: request("/echo"))
        let started = expectation(forNotification: .operationDidStart, object: operation) { _ in
            Thread.current.name != "OperationNetworking.network"
        }
        let finished = expectation(forNotification: .operationDidFinish, object: operation) { _ in
            Thread.current.name != "OperationNetworking.network"
        }
        operation.start()
        wait(for: [started, finished], timeout: 5, enforceOrder: true)
        XCTAssertNotNil(operation.responseData)
    }

    func testHandlersRunOnTheGivenCompletionQueueInTheGivenGroup() {
        let queue = DispatchQueue(label: "test.completion")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let group = DispatchGroup()
        let operation = HTTPRequestOperation(request: request("/echo"))
        operation.completionQueue = queue
        operation.completionGroup = group
        let ran = expectation(description: "success")
        operation.setCompletionBlockWithSuccess({ _, _ in
            XCTAssertEqual(DispatchQueue.getSpecific(key: key), 7)
            ran.fulfill()
        }, failure: nil)
        operation.start()
        wait(for: [ran], timeout: 5)
        XCTAssertEqual(group.wait(timeout: .now() + 5), .success)
    }

    func testDefaultCallbackQueueIsSerial() {
        let active = Recorder<Int>()
        let overlaps = Recorder<Bool>()
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = 10
        let counter = NSLock()
        nonisolated(unsafe) var running = 0
        for _ in 0..<10 {
            let operation = HTTPRequestOperation(request: request("/echo"))
            operation.setCompletionBlockWithSuccess({ _, _ in
                counter.withLock { running += 1; if running > 1 { overlaps.append(true) } }
                Thread.sleep(forTimeInterval: 0.002)
                counter.withLock { running -= 1 }
                active.append(1)
                done.fulfill()
            }, failure: nil)
            operation.start()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(overlaps.count, 0)
    }

    func testBatchReportsProgressInOrderAndCompletesAfterAllHandlers() {
        let events = Recorder<String>()
        let operations = (0..<5).map { index -> HTTPRequestOperation in
            let operation = HTTPRequestOperation(request: request("/delay/\(10 * (5 - index))"))
            operation.setCompletionBlockWithSuccess({ _, _ in events.append("handler") }, failure: nil)
            return operation
        }
        let completed = expectation(description: "batch")
        let batch = URLConnectionOperation.batch(of: operations, progress: { finished, total in
            events.append("progress \(finished)/\(total)")
        }, completion: { members in
            events.append("completion \(members.count)")
            completed.fulfill()
        })
        XCTAssertEqual(batch.count, 6)
        OperationQueue().addOperations(batch, waitUntilFinished: false)
        wait(for: [completed], timeout: 10)
        let progress = events.all.filter { $0.hasPrefix("progress") }
        XCTAssertEqual(progress, (1...5).map { "progress \($0)/5" })
        XCTAssertEqual(events.all.last, "completion 5")
        XCTAssertEqual(events.all.filter { $0 == "handler" }.count, 5)
    }

    func testProgressBlocksReportEveryByte() {
        var request = request("/upload", method: "POST")
        request.httpBody = deterministicBytes(300_000)
        let operation = HTTPRequestOperation(request: request)
        let uploaded = Recorder<(Int, Int64, Int64)>()
        operation.setUploadProgressBlock { uploaded.append(($0, $1, $2)) }
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertTrue(eventually { uploaded.all.last?.1 == 300_000 })
        XCTAssertEqual(uploaded.all.map(\.0).reduce(0, +), 300_000)
        XCTAssertEqual(uploaded.all.last?.2, 300_000)

        let download = HTTPRequestOperation(request: self.request("/bytes/500000"))
        let downloaded = Recorder<(Int, Int64, Int64)>()
        download.setDownloadProgressBlock { downloaded.append(($0, $1, $2)) }
        XCTAssertTrue(run(download).isSuccess)
        XCTAssertTrue(eventually { downloaded.all.last?.1 == 500_000 })
        XCTAssertEqual(downloaded.all.map(\.0).reduce(0, +), 500_000)
        XCTAssertEqual(downloaded.all.last?.2, 500_000)
    }

    func testOutputStreamReceivesTheBody() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let operation = HTTPRequestOperation(request: request("/bytes/123456"))
        operation.outputStream = OutputStream(toFileAtPath: path, append: false)
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertNil(operation.responseData)
        XCTAssertEqual(FileManager.default.contents(atPath: path), deterministicBytes(123456))
    }

    func testFailingOutputStreamFailsTheOperation() {
        let operation = HTTPRequestOperation(request: request("/bytes/100000"))
        var buffer = [UInt8](repeating: 0, count: 10)
        operation.outputStream = OutputStream(toBuffer: &buffer, capacity: 10)
        let outcome = run(operation)
        XCTAssertNotNil(outcome.error, "a full stream must fail the operation, not hang it")
        XCTAssertTrue(eventually { operation.isFinished })
    }

    func testCopyIsAFreshOperationWithTheSameConfiguration() throws {
        let original = HTTPRequestOperation(request: request("/echo"))
        let serializer = JSONResponseSerializer()
        serializer.removesKeysWithNullValues = true
        original.responseSerializer = serializer
        original.credential = URLCredential(user: "u", password: "p", persistence: .none)
        original.shouldUseCredentialStorage = false
        let queue = DispatchQueue(label: "q")
        original.completionQueue = queue
        XCTAssertTrue(run(original).isSuccess)
        let copy = try XCTUnwrap(original.copy() as? HTTPRequestOperation)
        XCTAssertFalse(copy.isFinished)
        XCTAssertTrue(copy.isReady)
        XCTAssertNil(copy.response)
        XCTAssertEqual(copy.request.url, original.request.url)
        XCTAssertEqual(copy.credential?.user, "u")
        XCTAssertFalse(copy.shouldUseCredentialStorage)
        XCTAssertTrue(copy.completionQueue === queue)
        XCTAssertFalse(copy.responseSerializer === serializer)
        XCTAssertEqual((copy.responseSerializer as? JSONResponseSerializer)?.removesKeysWithNullValues, true)
        XCTAssertTrue(run(copy).isSuccess, "the copy runs again")
        XCTAssertEqual(server.requests.count, 2)
    }

    /// A copy carries the original's progress blocks (AFN 2.x copies them), and they are called.
    func testACopyReportsProgressThroughTheOriginalsBlocks() throws {
        let original = HTTPRequestOperation(request: request("/bytes/50000"))
        let downloaded = Recorder<Int64>()
        original.setDownloadProgressBlock { _, total, _ in downloaded.append(total) }
        let copy = try XCTUnwrap(original.copy() as? HTTPRequestOperation)
        XCTAssertTrue(run(copy).isSuccess)
        XCTAssertTrue(eventually { downloaded.all.last == 50_000 })
        var upload = request("/upload", method: "POST")
        upload.httpBody = deterministicBytes(40_000)
        let poster = HTTPRequestOperation(request: upload)
        let uploaded = Recorder<Int64>()
        poster.setUploadProgressBlock { _, total, _ in uploaded.append(total) }
        let postCopy = try XCTUnwrap(poster.copy() as? HTTPRequestOperation)
        XCTAssertTrue(run(postCopy).isSuccess)
        XCTAssertTrue(eventually { uploaded.all.last == 40_000 })
    }

    func testManyQueuedOperationsAllComplete() {
        let queue = OperationQueue()
        let count = 2000
        let done = expectation(description: "all")
        done.expectedFulfillmentCount = count
        let failures = Recorder<Error>()
        for index in 0..<count {
            // The requests' no-progress timeout is the wait's: the first 512 open their connections at
            // once, and on a loaded machine under a sanitizer the in-process server can leave one of
            // them without a byte for longer than the default 10 s this test is not about.
            let operation = HTTPRequestOperation(request: request("/bytes/\(index % 100 + 1)", timeout: 60))
            operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, error in
                failures.append(error)
                done.fulfill()
            })
            queue.addOperation(operation)
        }
        wait(for: [done], timeout: 60)
        XCTAssertEqual(failures.count, 0, "\(failures.all.prefix(3))")
        XCTAssertEqual(server.requests.count, count)
        XCTAssertLessThanOrEqual(server.acceptedConnections, NetworkThread.maxActiveTransfers)
    }
}
