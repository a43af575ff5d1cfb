import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A fresh hit makes no transfer and never reaches the network thread: the operation turns `answering`
/// and its answer goes from the start straight to the delivery queue. Every test holds the network
/// thread (an operation's did-receive-response block waits there) while its hits run, so a hit that
/// went through that thread could not end before the hold is released. A `cancel()` or `pause()`
/// made before the answer arrives (the delivery queue held too, to put the call there) is decided
/// under the operation's lock: one end, a cancel when the cancel came first, the cached response
/// after a pause (which it overtakes, as a transfer's end overtakes a pause on its way).
final class CacheHitWithoutNetworkThreadTests: ServerTestCase {
    private var cache: SQLiteURLCache!
    private var cacheDirectory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-hit-\(UUID().uuidString)")
        cache = SQLiteURLCache(memoryCapacity: 4 << 20, diskCapacity: 20 << 20, directory: cacheDirectory)
    }

    override func tearDown() {
        cache?.flush()
        cache = nil
        try? FileManager.default.removeItem(at: cacheDirectory)
        super.tearDown()
    }

    func testAHitEndsWhileTheNetworkThreadIsHeld() throws {
        let path = "/cache/held?cc=max-age%3D600"
        let body = try prime(path)
        let hold = try NetworkThreadHold(request: request("/bytes/64", timeout: 60))
        defer { hold.release() }

        let operation = hit(path)
        let monitor = RecordingMonitor()
        operation.eventMonitors = [monitor]
        let order = Recorder<String>()
        let observers = [Notification.Name.operationDidStart, .operationDidFinish].map { name in
            NotificationCenter.default.addObserver(forName: name, object: operation, queue: nil) { note in
                order.append(note.name == .operationDidStart ? "didStart" : "didFinish")
            }
        }
        defer { observers.forEach(NotificationCenter.default.removeObserver) }
        let done = expectation(description: "handlers")
        operation.setCompletionBlockWithSuccess({ _, _ in
            order.append("success")
            done.fulfill()
        }, failure: { _, error in
            order.append("failure \(error)")
            done.fulfill()
        })
        operation.start()
        wait(for: [done], timeout: 5)
        operation.waitUntilFinished()
        XCTAssertTrue(hold.isHolding, "the network thread was held throughout")

        XCTAssertEqual(operation.responseData, body)
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertEqual(operation.metrics?.cacheStatus, .hit)
        XCTAssertEqual(operation.metrics?.attempts, 0)
        XCTAssertTrue(operation.isFinished)
        XCTAssertFalse(operation.isCancelled)
        XCTAssertTrue(eventually { order.count == 3 })
        XCTAssertEqual(order.all, ["didStart", "success", "didFinish"])
        XCTAssertEqual(monitor.events, ["start /cache/held", "finish finished=false error=0"])
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/held" }.count, 1, "only the fetch that stored it")
    }

    /// Each sequence of calls lands while the answer waits on the held delivery queue: a cancel among
    /// them wins (it came first), a pause is overtaken by the answer; either way exactly one end.
    func testCallsBeforeTheAnswerArrivesDecideItsOneEnd() throws {
        let path = "/cache/calls?cc=max-age%3D600"
        let body = try prime(path)
        let hold = try NetworkThreadHold(request: request("/bytes/64", timeout: 60))
        defer { hold.release() }

        // The calls; whether the operation is paused after them, and whether a pause took effect (a
        // pause is announced with `operationDidFinish`, as every pause; one after a cancel does nothing).
        let sequences: [(calls: [String], paused: Bool, announced: Bool)] = [
            (["cancel"], false, false), (["pause"], true, true), (["pause", "resume"], false, true),
            (["pause", "cancel"], false, true), (["cancel", "pause"], false, false),
            (["pause", "resume", "pause"], true, true), (["resume", "start"], false, false),
        ]
        for (calls, paused, announced) in sequences {
            let operation = hit(path)
            let ends = EndCounter()
            ends.install(on: operation)
            let finishes = Recorder<String>()
            let observer = NotificationCenter.default.addObserver(forName: .operationDidFinish, object: operation,
                                                                  queue: nil) { _ in finishes.append("didFinish") }
            defer { NotificationCenter.default.removeObserver(observer) }
            let delivery = try DeliveryHold()
            operation.start()
            XCTAssertTrue(operation.isExecuting, "\(calls): answering")
            for call in calls {
                switch call {
                case "cancel": operation.cancel()
                case "pause": operation.pause()
                case "resume": operation.resume()
                default: operation.start()
                }
            }
            let cancelled = calls.contains("cancel")
            XCTAssertEqual(operation.isCancelled, cancelled, "\(calls)")
            XCTAssertEqual(operation.isPaused, paused, "\(calls)")
            delivery.release()
            wait(for: [ends.first], timeout: 5)
            operation.waitUntilFinished()
            drainLibraryQueues()

            XCTAssertEqual(finishes.count, announced ? 2 : 1, "\(calls): the pause's announcement, then the finish")
            XCTAssertEqual(ends.count, 1, "\(calls): one end")
            XCTAssertFalse(operation.isPaused, "\(calls)")
            XCTAssertEqual(operation.isCancelled, cancelled, "\(calls)")
            if cancelled {
                XCTAssertEqual((operation.error as? URLError)?.code, .cancelled, "\(calls)")
                XCTAssertNil(operation.responseData, "\(calls)")
            } else {
                XCTAssertNil(operation.error, "\(calls)")
                XCTAssertEqual(operation.responseData, body, "\(calls)")
                XCTAssertEqual(operation.metrics?.cacheStatus, .hit, "\(calls)")
            }
        }
        XCTAssertTrue(hold.isHolding, "the network thread was held throughout")
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/calls" }.count, 1, "only the fetch that stored it")
    }

    /// Archiving pauses an executing operation and waits for the pause to settle: the answer settles it,
    /// and the archive holds the finished operation with the cached response.
    func testArchivingAHitBeforeItsAnswerArrivesArchivesItFinished() throws {
        let path = "/cache/archived?cc=max-age%3D600"
        let body = try prime(path)
        let hold = try NetworkThreadHold(request: request("/bytes/64", timeout: 60))
        defer { hold.release() }

        let operation = hit(path)
        let ends = EndCounter()
        ends.install(on: operation)
        let delivery = try DeliveryHold()
        operation.start()
        let archived = ArchiveBox()
        let archiving = expectation(description: "archived")
        DispatchQueue.global().async {
            archived.set(try? SafeArchive.archive(operation))
            archiving.fulfill()
        }
        XCTAssertTrue(eventually { operation.isPaused }, "the archiver paused it")
        delivery.release()
        wait(for: [archiving, ends.first], timeout: 5)
        operation.waitUntilFinished()
        drainLibraryQueues()

        XCTAssertEqual(ends.count, 1)
        XCTAssertEqual(operation.responseData, body)
        let archive = try XCTUnwrap(archived.value)
        let restored = try XCTUnwrap(SafeArchive.unarchive(HTTPRequestOperation.self, from: archive))
        XCTAssertTrue(restored.isFinished, "archived once the answer ended the run")
        XCTAssertEqual(restored.responseData, body)
        XCTAssertTrue(hold.isHolding, "the network thread was held throughout")
    }

    /// Many hits, each raced by a `cancel()` or `pause()` from another thread at a random moment (before
    /// the start, before the answer arrives, after it): every one ends once, consistently, without the
    /// network thread.
    func testCancelAndPauseRacingHitsEndEachOnce() throws {
        let path = "/cache/raced?cc=max-age%3D600"
        let body = try prime(path)
        let hold = try NetworkThreadHold(request: request("/bytes/64", timeout: 60))
        defer { hold.release() }

        var random = SplitMix64(seed: 57)
        let count = 200
        let operations = (0..<count).map { _ in hit(path) }
        let counters = operations.map { operation -> EndCounter in
            let ends = EndCounter()
            ends.install(on: operation)
            return ends
        }
        let cancelTookEffect = Recorder<Int>()
        let plans = (0..<count).map { _ in (cancel: random.next() % 2 == 0, spins: Int(random.next() % 200_000)) }
        DispatchQueue.concurrentPerform(iterations: count * 2) { index in
            let (slot, caller) = (index / 2, index % 2 == 1)
            let operation = operations[slot]
            guard caller else { return operation.start() }
            var spin = 0
            for step in 0..<plans[slot].spins { spin &+= step }   // a moment of its own, not synchronization
            withExtendedLifetime(spin) {}
            if plans[slot].cancel {
                operation.cancel()
                if operation.isCancelled { cancelTookEffect.append(slot) }
            } else {
                operation.pause()
            }
        }
        // A pause that landed before its start parked the operation: it continues when resumed.
        let finished = eventually(timeout: 10) {
            for operation in operations where operation.isPaused { operation.resume() }
            return operations.allSatisfy { $0.isFinished }
        }
        XCTAssertTrue(finished, "every hit finished while the network thread was held")
        guard finished else { return }
        drainLibraryQueues()

        let cancelled = Set(cancelTookEffect.all)
        for (slot, operation) in operations.enumerated() {
            XCTAssertEqual(counters[slot].count, 1, "hit \(slot): one end")
            if cancelled.contains(slot) {
                XCTAssertEqual((operation.error as? URLError)?.code, .cancelled, "hit \(slot): its cancel took effect")
            }
            if operation.error == nil {
                XCTAssertFalse(operation.isCancelled, "hit \(slot)")
                XCTAssertEqual(operation.responseData, body, "hit \(slot)")
                XCTAssertEqual(operation.metrics?.cacheStatus, .hit, "hit \(slot)")
            } else {
                XCTAssertEqual((operation.error as? URLError)?.code, .cancelled, "hit \(slot)")
                XCTAssertTrue(operation.isCancelled, "hit \(slot)")
            }
        }
        XCTAssertTrue(hold.isHolding, "the network thread was held throughout")
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/raced" }.count, 1, "only the fetch that stored it")
    }

    /// `start()` and `resume()` ask the cache before they take the operation's lock, then apply the
    /// event under it. An operation paused before the queue's start reached it, and resumed by another
    /// thread between the two, has that start begin a run from nothing after all: the run must not go
    /// without the cache (not answered from it, nothing stored, an unsafe request invalidating nothing).
    /// The interleaving is made step by step, with the calls `startOrResume` makes.
    func testAStartThatAResumeTurnedIntoARunIsLookedUpAgainAndAnsweredFromTheCache() throws {
        let path = "/cache/resumed?cc=max-age%3D600"
        let body = try prime(path)
        let operation = hit(path)
        operation.pause()   // before any start: parked, not ready
        let start: (inout OperationState) -> OperationState.Action? = { $0.start() }
        let security = operation.securitySnapshot()
        // The queue's thread: its start, on a parked operation, begins no run, so nothing is looked up.
        let early = operation.cacheLookup(security: security, for: start)
        XCTAssertNil(early)
        // Another thread's resume lands before that start takes the lock: the start now begins a run.
        operation.resume()
        XCTAssertNil(operation.apply(start, security: security, cache: early, trace: nil),
                     "a run from nothing that was not looked up is not begun: it would skip the cache")
        XCTAssertFalse(operation.isExecuting, "refused without a change")

        let done = expectation(description: "handlers")
        operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, error in
            XCTFail("\(error)")
            done.fulfill()
        })
        operation.start()   // the start as `startOrResume` then makes it: looked up again
        wait(for: [done], timeout: 10)
        XCTAssertEqual(operation.metrics?.cacheStatus, .hit)
        XCTAssertEqual(operation.responseData, body)
        XCTAssertEqual(server.requests.filter { $0.path == "/cache/resumed" }.count, 1, "only the fetch that stored it")
    }

    // MARK: - Helpers

    /// Fetches `path` over the network through the test's cache, which stores it; returns the body.
    private func prime(_ path: String) throws -> Data {
        let operation = hit(path)
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertNotEqual(operation.metrics?.cacheStatus, .hit)
        return try XCTUnwrap(operation.responseData)
    }

    /// An operation for `path` through the test's cache.
    private func hit(_ path: String) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request(path))
        operation.urlCache = cache
        return operation
    }

    /// Waits until what the delivery queue and the callback queue hold now has run: an end delivered
    /// twice would have run its handlers by then.
    private func drainLibraryQueues() {
        CallbackQueues.delivery.sync {}
        let drained = expectation(description: "callback queue drained")
        CallbackQueues.async(on: CallbackQueues.callback) { drained.fulfill() }
        wait(for: [drained], timeout: 5)
    }
}

/// Holds the shared network thread: an operation whose did-receive-response block, which runs on that
/// thread, waits until `release()` (at most 30 s).
private final class NetworkThreadHold {
    private let operation: HTTPRequestOperation
    private let released = DispatchSemaphore(value: 0)
    private let held = Protected(true)

    init(request: URLRequest) throws {
        operation = HTTPRequestOperation(request: request)
        operation.urlCache = nil
        let (entered, released, held) = (DispatchSemaphore(value: 0), released, held)
        let onNetworkThread = Protected(false)
        operation.setDidReceiveResponseBlock { _, _ in
            onNetworkThread.withLock { $0 = NetworkThread.shared.isCurrentThread }
            entered.signal()
            if released.wait(timeout: .now() + 30) == .timedOut { held.withLock { $0 = false } }
            return .allow
        }
        operation.start()
        guard entered.wait(timeout: .now() + 10) == .success else {
            throw XCTSkip("the holding operation's response never arrived")
        }
        XCTAssertTrue(onNetworkThread.value, "the hold runs on the network thread")
    }

    /// Whether the network thread is still held (the wait did not time out).
    var isHolding: Bool { held.value }

    /// Lets the network thread go, and waits for the holding operation to finish.
    func release() {
        released.signal()
        operation.waitUntilFinished()
    }
}

/// Holds the library's delivery queue (a block on it waits) until `release()`, at most 30 s.
private final class DeliveryHold {
    private let released = DispatchSemaphore(value: 0)

    init() throws {
        let (entered, released) = (DispatchSemaphore(value: 0), released)
        CallbackQueues.delivery.async {
            entered.signal()
            _ = released.wait(timeout: .now() + 30)
        }
        guard entered.wait(timeout: .now() + 10) == .success else { throw XCTSkip("the delivery queue never ran the hold") }
    }

    func release() { released.signal() }
}

/// Counts an operation's handler calls; `first` is fulfilled by the first.
private final class EndCounter: Sendable {
    let first = XCTestExpectation(description: "first end")
    private let calls = Protected(0)

    var count: Int { calls.value }

    func install(on operation: HTTPRequestOperation) {
        first.assertForOverFulfill = false
        operation.setCompletionBlockWithSuccess({ [self] _, _ in ended() }, failure: { [self] _, _ in ended() })
    }

    private func ended() {
        calls.withLock { $0 += 1 }
        first.fulfill()
    }
}

/// The archive an archiving thread made.
private final class ArchiveBox: Sendable {
    private let archive = Protected<Data?>(nil)
    var value: Data? { archive.value }
    func set(_ data: Data?) { archive.withLock { $0 = data } }
}
