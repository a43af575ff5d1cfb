import CFloorCurl
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

// Usage: floor REQUESTS CONCURRENCY [notify]
//
// Runs REQUESTS asynchronous `Operation`s through one `OperationQueue` whose
// `maxConcurrentOperationCount` is CONCURRENCY, each taking the path API.md §1–3 prescribes for a
// request, but with a transfer that ends the moment it starts:
//
//   OperationQueue worker (`start()`) → the one network thread (woken through a pipe only while it
//   sleeps in poll(2), as the library's loop is) → one dispatch per loop turn to a serial delivery
//   queue (where responses are serialized) → one dispatch per batch to the serial callback queue
//   (success handler, then `isFinished`) → the queue starts the next operation.
//
// With `notify`, each operation also posts the two notifications API.md §2 requires of every request
// (did-start and did-finish, on the callback queue), the one piece of per-request work the contract
// names beyond the hops. Like `onet bench`, each finished operation queues the next. What it prints is
// the least time a request can take in this model on this machine; pinned to one core
// (`taskset -c 0`) it is what the model adds to raw libcurl's time per request in the harness.
//
// With `--url URL` the transfer is real: raw libcurl performs a GET on the loop thread (CurlLoop.swift)
// and the model's hops run around it, with no library in between. That is the composite the ceiling
// formula only adds up: measured, it includes what running both on one core costs beyond their sum.
// In the harness's client form (`floor --url URL --requests N --concurrency C --method GET
// --body-size B`, notifications on) it prints the harness's RESULT line, so that a run records the
// composite beside every client (GET, or POST from memory as curl-multi sends it, over plain HTTP/1.1
// only; UNSUPPORTED otherwise).
//
// With `--contract` as well, each operation also does the per-request work API.md leaves any
// implementation on corelibs (ContractWork.swift): the composite with everything that cannot be left
// out, and nothing a library could choose to do otherwise.
//
// With `--own-work UNITS`, each operation also spends UNITS units of synthetic work (OwnWork.swift)
// where a library spends its own: the composite with a library's own cost of a known number of
// instructions, to price such a number in throughput (bench/README.md, round 17). With
// `--own-footprint FUNCTIONS`, it also runs that many distinct functions of straight-line code
// (footprint.c): a library's own code footprint of a known size, with few instructions; with
// `--own-data LINES`, it reads that many distinct lines of a 1 MiB region (its data footprint);
// `--own-footprint-pages` puts each of those functions on a page of its own.

/// What an operation's `start()` hands itself to: a loop on the one network thread.
protocol RequestLoop: AnyObject, Sendable {
    /// From `start()`: queue the operation, waking the loop only if it sleeps.
    func submit(_ operation: FloorOperation)
    /// The loop itself; never returns.
    func run()
}

/// The two hops after the network thread, shared by both loops: one dispatch per loop turn to a serial
/// delivery queue (where responses are serialized), one per batch to the serial callback queue.
/// Both queues are immutable and `Sendable`.
struct Delivery: Sendable {
    let delivery = DispatchQueue(label: "floor.delivery")
    let callback = DispatchQueue(label: "floor.callback")

    func deliver(_ batch: [FloorOperation]) {
        delivery.async { [callback] in
            // Where the library validates and serializes; here only `--contract`'s status check.
            for operation in batch {
                operation.spendOwnWork(at: 2)
                if checksContract { ContractWork.validate(operation) }
            }
            callback.async {
                for operation in batch {
                    // Posted as `Operation`, as a library posts `self` from its own open operation
                    // class: with the object's static type a final class, corelibs' bridging of `object`
                    // goes through a dynamic cast, about 2,300 instructions more per post (measured
                    // 2026-11-27: 4.6k against 2.3k).
                    if postsNotifications {
                        NotificationCenter.default.post(name: didStart, object: operation as Operation)
                    }
                    operation.handler()
                    operation.finish()
                    if postsNotifications {
                        NotificationCenter.default.post(name: didFinish, object: operation as Operation)
                    }
                }
            }
        }
    }
}

/// The operations handed to a loop and whether the loop sleeps, both guarded by `lock`; hence
/// `@unchecked Sendable`. Shared by both loops, so that they take work in the same way.
final class Inbox: @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [FloorOperation] = []   // guarded by lock
    private var parked = false                   // guarded by lock

    /// Adds `operation`; true when the loop sleeps and must be woken (it counts as awake from now on).
    func put(_ operation: FloorOperation) -> Bool {
        lock.lock()
        waiting.append(operation)
        let wake = parked
        parked = false
        lock.unlock()
        return wake
    }

    /// Swaps what waits into `taken` (empty on entry). With `parkingIfNone`, the loop counts as asleep
    /// when nothing waited.
    func take(into taken: inout [FloorOperation], parkingIfNone: Bool) {
        lock.lock()
        swap(&waiting, &taken)
        if parkingIfNone { parked = taken.isEmpty }
        lock.unlock()
    }

    /// Counts the loop as asleep if nothing waits; true if it does.
    func parkIfEmpty() -> Bool {
        lock.lock()
        parked = waiting.isEmpty
        let sleeps = parked
        lock.unlock()
        return sleeps
    }

    /// The loop is awake again.
    func unpark() {
        lock.withLock { parked = false }
    }
}

/// The stand-in for the network thread: takes operations in, "finishes" them at once, and hands each
/// loop turn's batch to the delivery queue. The pipe and queues are immutable and the inbox guards
/// itself; hence `@unchecked Sendable`.
final class NetworkLoop: RequestLoop, @unchecked Sendable {
    private let inbox = Inbox()
    /// Read end (non-blocking) and write end of the wake-up pipe.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let hops = Delivery()

    init() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            FileHandle.standardError.write(Data("floor: pipe failed\n".utf8))
            exit(1)
        }
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    func submit(_ operation: FloorOperation) {
        if inbox.put(operation) {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    /// The loop: drain, deliver the batch, or sleep in poll(2) until woken.
    func run() {
        var taken: [FloorOperation] = []
        var scratch = [UInt8](repeating: 0, count: 64)
        while true {
            inbox.take(into: &taken, parkingIfNone: true)
            if taken.isEmpty {
                var entry = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
                _ = poll(&entry, 1, 1000)
                _ = read(wakeRead, &scratch, scratch.count)
                continue
            }
            for operation in taken { operation.spendOwnWork(at: 1) }
            let batch = taken
            taken.removeAll(keepingCapacity: true)
            hops.deliver(batch)
        }
    }
}

/// An asynchronous operation that hands itself to the loop; `done` is guarded by `lock`. The
/// `--contract` fields are written on the loop thread before it hands the operation to the delivery
/// queue, and read there and after (the dispatch orders them).
final class FloorOperation: Operation, @unchecked Sendable {
    let handler: @Sendable () -> Void
    private let loop: any RequestLoop
    private let lock = NSLock()
    private var done = false   // guarded by lock
    /// `--contract`: the request the operation was made with.
    let request: URLRequest?
    /// `--contract`: the request's timeout, its easy handle's state (kept head, proxy; also kept for
    /// `--read-body`'s reader), the head copied at the transfer's end, the status and whether the
    /// serializer accepted it.
    var timeout: TimeInterval = 0
    var handleState: UnsafeMutablePointer<floor_handle_state>?
    var head: [UInt8] = []
    var status = 0
    var accepted = false

    init(loop: any RequestLoop, request: URLRequest?, handler: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.request = request
        self.handler = handler
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { lock.withLock { !done } }
    override var isFinished: Bool { lock.withLock { done } }

    override func start() {
        spendOwnWork(at: 0)
        // corelibs has no KVO: an asynchronous operation announces its state changes itself.
        willChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isExecuting")
        loop.submit(self)
    }

    /// `--own-work` and `--own-footprint`: the synthetic work and code due at `place` (0 start, 1 loop
    /// thread, 2 delivery), the work under the operation's own lock.
    func spendOwnWork(at place: Int) {
        OwnWork.spend(ownWorkUnits.at(place), lock: lock)
        OwnWork.touchFootprint(first: ownFootprint.before(place), count: ownFootprint.at(place),
                               paged: ownFootprintPaged)
        OwnWork.touchData(lines: ownData.at(place))
    }

    func finish() {
        willChangeValue(forKey: "isFinished")
        lock.withLock { done = true }
        didChangeValue(forKey: "isFinished")
    }
}

/// Makes the run's operations as it goes and counts the finished ones; guarded by `lock`.
final class Feeder: @unchecked Sendable {
    private let lock = NSLock()
    private var made = 0       // guarded by lock
    private var finished = 0   // guarded by lock
    let total: Int
    let queue: OperationQueue
    let loop: any RequestLoop
    let done = DispatchSemaphore(value: 0)
    /// `--contract`: the request every operation is made with, copied as `onet bench` copies its own.
    let template: URLRequest?

    init(total: Int, queue: OperationQueue, loop: any RequestLoop, template: URLRequest?) {
        self.template = template
        self.total = total
        self.queue = queue
        self.loop = loop
    }

    /// Up to `count` new operations, fewer when the run has no more, made as `[Operation]`, the type
    /// `addOperations` takes, as a client queuing its operations does: an array of the subclass would
    /// be cast element by element (about 500 instructions a request).
    func make(_ count: Int) -> [Operation] {
        let taken: Int = lock.withLock {
            let taken = min(count, total - made)
            made += taken
            return taken
        }
        return (0..<taken).map { _ -> Operation in
            FloorOperation(loop: loop, request: template) { [self] in
                let last = lock.withLock {
                    finished += 1
                    return finished == total
                }
                if last { done.signal() }
                queue.addOperations(make(1), waitUntilFinished: false)
            }
        }
    }
}

let didStart = Notification.Name("FloorOperationDidStart")
let didFinish = Notification.Name("FloorOperationDidFinish")
var arguments = Array(CommandLine.arguments.dropFirst())
/// Takes `name VALUE` out of the arguments, if there.
@MainActor func option(_ name: String) -> String? {
    guard let flag = arguments.firstIndex(of: name), flag + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(flag...(flag + 1)) }
    return arguments[flag + 1]
}
/// Prints `message` on stderr and exits with `status`.
func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(status)
}
/// `--url URL`: real GETs through raw libcurl on the loop thread (`CurlLoop`) instead of none.
let url = option("--url")
/// `--header LINE`: one more request header with `--url` (to price a header a library adds).
let header = option("--header")
/// `--read-head`: with `--url`, the response's header lines go to a callback that only counts them.
let readsHead = arguments.contains("--read-head")
arguments.removeAll { $0 == "--read-head" }
/// `--contract`: with `--url`, also the work API.md leaves any implementation (ContractWork.swift).
let checksContract = arguments.contains("--contract")
arguments.removeAll { $0 == "--contract" }
/// `--read-body`: with `--method POST`, the body goes through a read callback, as a library streams it.
let readsBody = arguments.contains("--read-body")
arguments.removeAll { $0 == "--read-body" }
/// `--ca-cache`: with an `https://` URL, each handle trusts the CA bundle file alone, so libcurl parses it
/// once per multi handle rather than once per TLS connection (onet's choice, Transfer+TLS.swift).
let cachesCABundle = arguments.contains("--ca-cache")
arguments.removeAll { $0 == "--ca-cache" }
/// `--buffer-size N`: with `--url`, each handle's receive buffer is N bytes (onet sets 256 KiB,
/// `Transfer.receiveBufferSize`), to price the buffer apart from the rest of the library.
let bufferSizeArgument = option("--buffer-size")
let receiveBufferSize = bufferSizeArgument.flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil }
if let bufferSizeArgument, receiveBufferSize == nil {
    fail("floor: --buffer-size needs a positive number of bytes, not \(bufferSizeArgument)", status: 64)
}
/// `name COUNT` taken out of the arguments as a split of COUNT among the three places (OwnWork.swift);
/// 0 when absent, and a usage error unless COUNT is a whole number in `limit`.
@MainActor func ownSplit(_ name: String, of what: String, limit: ClosedRange<Int> = 0...Int.max) -> OwnWork.Split {
    guard let argument = option(name) else { return OwnWork.Split(total: 0) }
    guard let total = Int(argument), limit.contains(total) else {
        fail("floor: \(name) needs \(limit.upperBound == Int.max ? "0 or more" : "0 to \(limit.upperBound)") \(what), "
             + "not \(argument)", status: 64)
    }
    return OwnWork.Split(total: total)
}
/// `--own-work UNITS`: synthetic work a request (OwnWork.swift), to price a library's own cost in throughput.
let ownWorkUnits = ownSplit("--own-work", of: "units")
/// `--own-footprint-pages`: with `--own-footprint`, functions that each lie on a page of their own.
let ownFootprintPaged = arguments.contains("--own-footprint-pages")
arguments.removeAll { $0 == "--own-footprint-pages" }
/// `--own-footprint FUNCTIONS`: distinct functions of footprint.c run a request, at most as many as it has.
let ownFootprint = ownSplit("--own-footprint", of: "functions",
                            limit: 0...(ownFootprintPaged ? floor_footprint_paged_functions() : floor_footprint_functions()))
/// `--own-data LINES`: distinct data lines read a request (footprint.c).
let ownData = ownSplit("--own-data", of: "lines")
/// The harness's client form (`--requests N --concurrency C --method M --body-size B`, bench/README.md):
/// the composite with both notifications, reporting a `RESULT` line. GET, or POST from memory, over
/// HTTP/1.1 (`http://` or `https://`), or GET over HTTP/2 with TLS under the harness's `BENCH_H2=1`.
let harnessRequests = option("--requests"), harnessConcurrency = option("--concurrency")
let harnessMethod = option("--method")
let harnessBodySize = option("--body-size")
_ = option("--max-host-conns")
let harnessForm = harnessRequests != nil
/// `--method POST`: every request is a POST of `--body-size` bytes, as curl-multi sends one.
let postBodySize: Int? = harnessMethod == "POST" ? Int(harnessBodySize ?? "0") : nil
if harnessForm {
    let http2 = BenchEnvironment.http2
    guard let url, url.hasPrefix("https://") || (!http2 && url.hasPrefix("http://")),
          ["GET", "POST"].contains(harnessMethod ?? "GET"), !http2 || harnessMethod != "POST",
          harnessMethod != "POST" || (postBodySize ?? -1) >= 0 else {
        print("UNSUPPORTED: the composite floor runs GET, or POST from memory, over HTTP/1.1, and GET over HTTP/2 with TLS")
        exit(3)
    }
    arguments = [harnessRequests ?? "", harnessConcurrency ?? "1", "notify"]
}
/// Whether every operation posts the two notifications (third argument `notify`).
let postsNotifications = arguments.count == 3 && arguments[2] == "notify"
guard arguments.count == 2 || postsNotifications, let requests = Int(arguments[0]), let concurrency = Int(arguments[1]),
      requests > 0, concurrency > 0 else {
    fail("usage: floor REQUESTS CONCURRENCY [notify] [--url URL [--header LINE] [--read-head] [--contract]\n"
         + "                                          [--read-body] [--ca-cache] [--buffer-size N]]\n"
         + "                                          [--own-work UNITS] [--own-footprint FUNCTIONS [--own-footprint-pages]]\n"
         + "                                          [--own-data LINES]\n"
         + "       floor --url URL --requests N --concurrency C --method GET|POST --body-size B", status: 64)
}
if checksContract && url == nil { fail("floor: --contract needs --url", status: 64) }
let curlLoop = url.flatMap {
    CurlLoop(url: $0, header: header, readsHead: readsHead, contract: checksContract, concurrency: concurrency,
             postBodySize: postBodySize, readsBody: readsBody, cachesCABundle: cachesCABundle,
             receiveBufferSize: receiveBufferSize)
}
if url != nil && curlLoop == nil { fail("floor: libcurl could not be set up", status: 1) }
let loop: any RequestLoop = curlLoop ?? NetworkLoop()
let thread = Thread { loop.run() }
thread.start()
let queue = OperationQueue()
queue.maxConcurrentOperationCount = concurrency
/// Under `--contract`, the request `onet bench` makes: a POST carries its body and type in the request.
let template = checksContract ? url.flatMap(URL.init(string:)).map { target -> URLRequest in
    var request = URLRequest(url: target)
    if let postBodySize {
        request.httpMethod = "POST"
        request.httpBody = Data(repeating: 0x61, count: postBodySize)
        request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
    }
    return request
} : nil
if checksContract && template == nil { fail("floor: --contract needs a valid URL", status: 64) }
let feeder = Feeder(total: requests, queue: queue, loop: loop, template: template)
let start = DispatchTime.now()
queue.addOperations(feeder.make(max(2 * concurrency, 64)), waitUntilFinished: false)
feeder.done.wait()
let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
if harnessForm, let curlLoop {
    // Read after the last handler ran: the loop's counters were written before it handed that batch on.
    let errors = curlLoop.failedTransfers, bytes = curlLoop.receivedBytes
    print(String(format: "RESULT requests=%d errors=%d wall_s=%.6f rps=%.2f mbps=%.3f bytes=%lld", requests, errors,
                 seconds, Double(requests - errors) / seconds, Double(bytes) / 1e6 / seconds, bytes))
    exit(errors == 0 ? 0 : 1)
}
print(String(format: "floor requests=%d concurrency=%d notify=%@ transport=%@ wall_s=%.6f us_per_request=%.2f rps=%.0f",
             requests, concurrency, postsNotifications ? "yes" : "no", curlLoop == nil ? "none" : "curl", seconds,
             seconds / Double(requests) * 1e6, Double(requests) / seconds))
if let curlLoop, curlLoop.failedTransfers > 0 { fail("floor: \(curlLoop.failedTransfers) transfers failed", status: 1) }
