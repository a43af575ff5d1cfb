import Foundation
@_spi(Tool) @testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Many slow downloads, and random sequences of `pause`, `resume`, `cancel`, archive-and-restore and
/// block changes made on them from several threads at once. Checked on every run: exactly one
/// handler per operation; never `success` after a `cancel()` that took effect; never `success` with
/// `isCancelled` true; every successful body byte-exact (restored archives included); every operation
/// finished in bounded time; every body the HTTP cache kept is whole (two operations share each URL,
/// so one may be answered from the cache while the other runs). Even seeds hold their queue's starts
/// for a while (`HeldStarts`), so that calls land between the queue's decision to start an operation
/// and its `start()`.
///
/// Seeded: a failure names its seed, and `ONET_INTERLEAVING_SEEDS=<seed>` replays it. The suite runs a
/// fixed set; `ONET_INTERLEAVINGS=<n>` runs at least n operations' interleavings (`.ci/run` asks for
/// 1,000 under ThreadSanitizer).
final class LifecycleInterleavingTests: ServerTestCase {
    /// Operations per seed (each one interleaving of calls).
    private static let operationsPerSeed = 20
    private static let fixedSeeds: [UInt64] = [1, 2, 3, 5, 8]

    private var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let listed = environment["ONET_INTERLEAVING_SEEDS"] {
            return listed.split(separator: ",").compactMap { UInt64($0.trimmingCharacters(in: .whitespaces)) }
        }
        if let wanted = environment["ONET_INTERLEAVINGS"].flatMap(Int.init), wanted > 0 {
            let count = (wanted + LifecycleInterleavingTests.operationsPerSeed - 1) / LifecycleInterleavingTests.operationsPerSeed
            return (0..<UInt64(count)).map { 1_000 + $0 }
        }
        return LifecycleInterleavingTests.fixedSeeds
    }

    func testRandomInterleavingsKeepEveryInvariant() throws {
        try runSeeds(interceptor: nil)
    }

    /// The same with a `RequestInterceptor` on every operation, which takes a while to adapt and sends
    /// each operation's first response again: the calls land while it is waited for.
    func testRandomInterleavingsWithAnInterceptorKeepEveryInvariant() throws {
        try runSeeds(interceptor: SlowInterceptor())
    }

    private func runSeeds(interceptor: RequestInterceptor?) throws {
        var total = 0
        var outcomes: [CacheStatus: Int] = [:]
        for seed in seeds {
            let (violations, statuses) = try run(seed: seed, interceptor: interceptor)
            XCTAssertEqual(violations, [], "seed \(seed) (replay with ONET_INTERLEAVING_SEEDS=\(seed))")
            total += LifecycleInterleavingTests.operationsPerSeed
            for status in statuses { outcomes[status, default: 0] += 1 }
        }
        XCTAssertGreaterThan(outcomes[.stored, default: 0], 0, "the cache took no part")
        let cache = outcomes.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        print("LifecycleInterleavingTests: \(total) interleavings, seeds \(seeds.first ?? 0)…\(seeds.last ?? 0); cache: \(cache)")
    }

    /// One seed: its operations, three threads of random calls, then everything resumed and awaited.
    /// Returns the violations, and what the cache did for each operation that finished with metrics.
    private func run(seed: UInt64, interceptor: RequestInterceptor?) throws -> ([String], [CacheStatus]) {
        var random = SplitMix64(seed: seed)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = OperationQueue.defaultMaxConcurrentOperationCount
        let held = HeldStarts(holding: seed % 2 == 0)
        if let starts = held.queue { queue.underlyingQueue = starts }
        let all = Tracked()
        // The HTTP cache takes part: every operation stores in and reads from one cache of the seed's,
        // and two slots share each URL (`/bytes` is heuristically fresh), the second depending on the
        // first, so that it is answered by what the first stored unless the calls stopped that.
        let cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-interleaving-\(seed)-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: cacheDirectory) }
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 64 << 20, directory: cacheDirectory)
        var resources: [(size: Int, path: String)] = []
        var firstOfPair: HTTPRequestOperation?
        let slots = (0..<LifecycleInterleavingTests.operationsPerSeed).map { index -> Slot in
            if index % 2 == 0 {
                let size = 8_192 + Int(random.next() % 24) * 1_024
                resources.append((size, "/bytes/\(size)?chunkSize=1024&chunkDelayMs=\(3 + random.next() % 8)&op=\(seed)-\(index / 2)"))
            }
            let (size, path) = resources[index / 2]
            let operation = HTTPRequestOperation(request: request(path, timeout: 20))
            operation.urlCache = cache
            operation.interceptor = interceptor
            if index % 2 == 1, let firstOfPair { operation.addDependency(firstOfPair) }
            firstOfPair = operation
            let tracker = LifecycleInterleavingTests.track(operation, size: size)
            all.add(tracker)
            return Slot(size: size, tracker: tracker)
        }
        for slot in slots { queue.addOperation(slot.current.operation) }
        let group = DispatchGroup()
        let releaseAfter = UInt32(seed % 7) * 20_000
        DispatchQueue.global().async(group: group) {
            usleep(releaseAfter)   // how long the starts are held (0-120 ms), not synchronization
            held.release()
        }
        for thread in 0..<3 {
            let threadSeed = seed &* 31 &+ UInt64(thread)
            DispatchQueue.global().async(group: group) {
                var local = SplitMix64(seed: threadSeed)
                for _ in 0..<20 {
                    usleep(UInt32(local.next() % 15_000))   // jitter between calls, not synchronization
                    let slot = slots[Int(local.next() % UInt64(slots.count))]
                    LifecycleInterleavingTests.act(Int(local.next() % 6), on: slot, all: all)
                }
            }
        }
        guard group.wait(timeout: .now() + 60) == .success else { return (["the calling threads did not return in 60 s"], []) }
        held.release()
        // Let everything run out: every paused or parked operation continues.
        for operation in all.operations { operation.operation.resume() }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !all.operations.allSatisfy({ $0.handlerCalls >= 1 && $0.operation.isFinished }) {
            for operation in all.operations where operation.operation.isPaused { operation.operation.resume() }
            let tick = expectation(description: "tick")
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) { tick.fulfill() }
            wait(for: [tick], timeout: 1)
        }
        queue.cancelAllOperations()
        // Whatever the cache kept is a whole body: nothing cancelled, paused or cut short was stored.
        let stored = resources.compactMap { resource -> String? in
            guard let entry = cache.cachedResponse(for: request(resource.path)),
                  entry.data != deterministicBytes(resource.size) else { return nil }
            return "\(resource.path): the cache holds \(entry.data.count) of \(resource.size) bytes, not byte-exact"
        }
        cache.flush()   // a store says `.stored` once its batch is written
        let statuses = all.operations.compactMap { $0.operation.metrics?.cacheStatus }
        return withExtendedLifetime(held) { (all.operations.flatMap { $0.violations() } + stored, statuses) }
    }

    /// One random call on the slot's current operation.
    private static func act(_ choice: Int, on slot: Slot, all: Tracked) {
        let tracker = slot.current
        let operation = tracker.operation
        switch choice {
        case 0:
            operation.pause()
        case 1:
            operation.resume()
        case 2:
            operation.cancel()
            if operation.isCancelled { tracker.cancelTookEffect() }
        case 3:
            // Weakly: the tracker holds the operation, which keeps its progress block.
            operation.setDownloadProgressBlock { [weak tracker] _, total, expected in
                if expected > 0 && total > expected { tracker?.record("progress past the expected length: \(total)/\(expected)") }
            }
        case 4:
            tracker.installHandlers()   // replaced by equal blocks: still exactly one call
        default:
            guard !operation.isFinished, let archive = try? SafeArchive.archive(operation),
                  let restored = try? SafeArchive.unarchive(HTTPRequestOperation.self, from: archive) else { return }
            // Archived once its transfer ended, it comes back finished with that outcome, and never runs.
            if restored.isFinished {
                if restored.error == nil && restored.responseData != deterministicBytes(slot.size) {
                    tracker.record("restored finished with \(restored.responseData?.count ?? -1) bytes, not byte-exact")
                }
                return
            }
            operation.cancel()
            if operation.isCancelled { tracker.cancelTookEffect() }
            restored.interceptor = operation.interceptor   // code: never archived
            let replacement = track(restored, size: slot.size)
            all.add(replacement)
            slot.replace(with: replacement)
            // resume() continues a restored paused download (AFNetworking's pattern); the start() after it is
            // the owner's one start of an operation in no queue, which every phase takes (another thread's
            // pause(), cancel() or archive may have landed on it since it was put in the slot: a resume()
            // alone leaves an operation paused before it started ready for a queue it is not in).
            if restored.isPaused { restored.resume() }
            restored.start()
        }
    }

    private static func track(_ operation: HTTPRequestOperation, size: Int) -> Tracker {
        let tracker = Tracker(operation: operation, size: size)
        tracker.installHandlers()
        return tracker
    }
}

/// A queue's dispatch queue, suspended until `release()`: corelibs' `OperationQueue` reads an operation
/// ready, marks it dispatched and runs its `start()` on that queue later; held, the window between the
/// two is wide. (The queue is `unowned(unsafe)` in `OperationQueue.underlyingQueue`: this keeps it.)
private final class HeldStarts: @unchecked Sendable {   // `suspended` is guarded by lock
    let queue: DispatchQueue?
    private let lock = NSLock()
    private var suspended: Bool   // guarded by lock

    init(holding: Bool) {
        queue = holding ? DispatchQueue(label: "held starts", attributes: .concurrent) : nil
        queue?.suspend()
        suspended = holding
    }

    /// Lets the held starts run; once (a dispatch queue must not be resumed more than it was suspended).
    func release() {
        let resume = lock.withLock { () -> Bool in
            defer { suspended = false }
            return suspended
        }
        if resume { queue?.resume() }
    }
}

/// One download of the run; archive-and-restore replaces its operation.
private final class Slot: @unchecked Sendable {   // `tracker` is guarded by lock
    let size: Int
    private let lock = NSLock()
    private var tracker: Tracker   // guarded by lock

    init(size: Int, tracker: Tracker) {
        self.size = size
        self.tracker = tracker
    }

    var current: Tracker { lock.withLock { tracker } }
    func replace(with new: Tracker) { lock.withLock { tracker = new } }
}

/// Every operation of a run; guarded by its lock.
private final class Tracked: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Tracker] = []   // guarded by lock
    func add(_ tracker: Tracker) { lock.withLock { list.append(tracker) } }
    var operations: [Tracker] { lock.withLock { list } }
}

/// What one operation did; guarded by its lock.
private final class Tracker: @unchecked Sendable {
    let operation: HTTPRequestOperation
    let size: Int
    private let lock = NSLock()
    private var calls = 0                 // guarded by lock
    private var cancelled = false         // guarded by lock
    private var succeeded = false         // guarded by lock
    private var problems: [String] = []   // guarded by lock

    init(operation: HTTPRequestOperation, size: Int) {
        self.operation = operation
        self.size = size
    }

    var handlerCalls: Int { lock.withLock { calls } }
    func cancelTookEffect() { lock.withLock { cancelled = true } }
    func record(_ problem: String) { lock.withLock { problems.append(problem) } }

    /// Weakly: blocks set on an operation that already finished stay with it (its tracker holds it).
    func installHandlers() {
        let size = self.size
        operation.setCompletionBlockWithSuccess({ [weak self] operation, _ in
            guard let self else { return }
            let isCancelled = operation.isCancelled
            let body = operation.responseData
            lock.withLock {
                calls += 1
                succeeded = true
                if cancelled { problems.append("success after a cancel() that took effect") }
                if isCancelled { problems.append("success with isCancelled true") }
                if body != deterministicBytes(size) {
                    problems.append("success with \(body?.count ?? -1) of \(size) bytes, not byte-exact")
                }
            }
        }, failure: { [weak self] operation, error in
            guard let self else { return }
            let isCancel = (error as NSError).domain == NSURLErrorDomain && (error as NSError).code == NSURLErrorCancelled
            lock.withLock {
                calls += 1
                if !isCancel { problems.append("failure other than a cancel: \(error)") }
            }
        })
    }

    func violations() -> [String] {
        let name = operation.request.url?.query ?? "?"
        let finished = operation.isFinished
        return lock.withLock {
            var all = problems
            if calls != 1 { all.append("\(calls) handler calls") }
            if !finished { all.append("not finished in bounded time") }
            if cancelled && succeeded { all.append("cancelled and succeeded") }
            return all.map { "\(name): \($0)" }
        }
    }
}

/// Waits up to 5 ms before each answer (jitter, so that calls land while it is waited for), marks the
/// request, and sends each operation's first response again.
private struct SlowInterceptor: RequestInterceptor {
    func adapt(_ request: URLRequest, for operation: URLConnectionOperation) async throws -> URLRequest {
        try? await Task.sleep(nanoseconds: UInt64.random(in: 0...5_000_000))
        var adapted = request
        adapted.setValue("1", forHTTPHeaderField: "X-Adapted")
        return adapted
    }

    func retry(_ operation: URLConnectionOperation, dueTo error: Error?, response: HTTPURLResponse?) async -> RetryDecision {
        try? await Task.sleep(nanoseconds: UInt64.random(in: 0...5_000_000))
        return response?.statusCode == 200 && operation.attempts < 2 ? .retry : .doNotRetry
    }
}

/// A small seeded generator (SplitMix64), so a failing seed replays the same calls.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
