import ArgumentParser
import Dispatch
import Foundation
import OperationNetworking
import Synchronization

/// `onet bench`: the client side of the benchmark harness (`bench/run`).
///
/// N requests go through one `OperationQueue` whose `maxConcurrentOperationCount` is C: exactly how
/// an AFNetworking 2.x user bounds requests in flight. Every response body is read whole: by default
/// streamed to an `outputStream` that counts and drops it (as the harness's other clients do), with
/// `--sink memory` kept in `responseData` (AFNetworking's default).
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run N requests with at most C in flight and print the harness's RESULT line.",
        discussion: """
        The benchmark client of ../shared/bench: its last line is the harness's RESULT line.

        Exit status: 0 when every request got a 2xx or 3xx; 1 when some did not (each distinct reason is one
        line on standard error, with its count: "onet: bench: 20 of 20 failed: Could not connect to the
        server — http://127.0.0.1:1/"); 3 with a last line starting UNSUPPORTED for a workload onet bench does
        not run (a --method other than GET or POST); 64 for a usage error (a count that is not positive, a URL
        that is not http or https), one line naming the option.

        Examples:
          onet bench --url http://127.0.0.1:8080/small --requests 20000 --concurrency 32
          onet bench --url http://127.0.0.1:8080/echo --method POST --body-size 65536 --concurrency 8
          onet bench --url http://127.0.0.1:8080/large --requests 4 --sink memory
        """)

    @Option(help: "URL to request.") var url: String
    // .unconditional: a negative count is a value to refuse by name, not a missing value.
    @Option(parsing: .unconditional, help: "Number of requests.") var requests: Int = 1000
    @Option(parsing: .unconditional, help: "Requests in flight at most (the queue's maxConcurrentOperationCount).")
    var concurrency: Int = 1
    @Option(help: "GET or POST (the harness's methods; others are reported UNSUPPORTED).") var method: String = "GET"
    @Option(name: .customLong("body-size"), parsing: .unconditional, help: "Request body bytes for POST.") var bodySize: Int = 0
    @Option(name: .customLong("max-host-conns"), help: "Accepted for harness compatibility; the queue bounds connections.")
    var maxHostConnections: Int = 0
    @Option(name: .customLong("multipart-file"), help: "POST this file as a streamed multipart part in every request.")
    var multipartFile: String?
    @Option(help: "Where response bodies go: 'stream' (an output stream that counts and drops them) or 'memory' (responseData).")
    var sink: Sink = .stream
    @Option(help: ArgumentHelp("Trust the CA certificates in this file (PEM or DER) besides the system's.", valueName: "file"))
    var cacert: String?

    @Option(name: .customLong("cache-dir"), help: ArgumentHelp(
        "Run through an HTTP cache in this directory (bench/cache's workloads; with --sink memory). None by default.",
        valueName: "dir"))
    var cacheDirectory: String?

    @Flag(name: .customLong("default-cache"), help: ArgumentHelp(
        "Leave each operation's urlCache as the library's default (URLCache.shared, on disk under $XDG_CACHE_HOME), "
            + "as a program that sets nothing runs (with --sink memory)."))
    var defaultCache = false

    @Option(name: .customLong("distinct-from"), help: ArgumentHelp(
        "Give request k the query ?n=FROM+k, a URL of its own (how a cache's cost is measured against its size).",
        valueName: "from"))
    var distinctFrom: Int?

    @Flag(name: .customLong("enqueue-all"),
          help: "Make every request at once through a manager onto its suspended queue, then run them; prints memory per queued operation.")
    var enqueueAll = false

    enum Sink: String, ExpressibleByArgument {
        case stream, memory
    }

    /// Why a request failed, in one line naming its URL: the status, or the transport error. curl's
    /// messages tell how long a step took ("Failed to connect to … after 1 ms"); that part is left out,
    /// so that requests failing for the same cause share one line however long each waited.
    static func reason(_ error: Error, of operation: HTTPRequestOperation?) -> String {
        if let response = operation?.response, !(200..<400).contains(response.statusCode) {
            return "HTTP \(response.statusCode) \(ResponsePrinter.reasonPhrase(response.statusCode)) — "
                + (operation?.request.url?.absoluteString ?? "")
        }
        return ResponsePrinter.describe(error as NSError)
            .replacingOccurrences(of: " after [0-9]+ (ms|milliseconds)", with: "", options: .regularExpression)
    }

    /// The methods the harness runs.
    static let supportedMethods: Set<String> = ["GET", "POST"]

    func validate() throws {
        guard requests > 0 else { throw ValidationError("--requests must be at least 1 (got \(requests))") }
        guard concurrency > 0 else { throw ValidationError("--concurrency must be at least 1 (got \(concurrency))") }
        guard bodySize >= 0 else { throw ValidationError("--body-size must be 0 or more (got \(bodySize))") }
        guard FetchPlan.httpURL(url) != nil else { throw ValidationError("--url: not an http(s) URL: '\(url)'") }
        if (cacheDirectory != nil || defaultCache) && (sink != .memory || enqueueAll) {
            // The library neither stores nor serves a body that streams to the caller.
            throw ValidationError("--cache-dir and --default-cache need --sink memory, and apply to the timed run only.")
        }
        if cacheDirectory != nil && defaultCache {
            throw ValidationError("--cache-dir and --default-cache are two caches: give one.")
        }
    }

    func run() throws {
        guard let target = URL(string: url) else { throw ValidationError("--url: not an http(s) URL: '\(url)'") }
        guard Bench.supportedMethods.contains(method) else {
            StandardStreams.write("onet: bench: --method \(method) is not supported (GET or POST)\n", to: .standardError)
            print("UNSUPPORTED onet bench sends GET or POST, not \(method)")
            throw ExitCode(3)
        }
        if enqueueAll && cacert != nil { throw ValidationError("--cacert applies to the timed run, not to --enqueue-all.") }
        // How a user trusts a private CA besides the system's; nil keeps the default policy.
        let policy = try cacert.map { path in
            let policy = SecurityPolicy.default()
            policy.additionalTrustAnchors = try CertificateFile.load([path], option: "--cacert")
            return policy
        }
        let body = method == "POST" ? Data(repeating: 0x61, count: bodySize) : nil
        print("# client=onet requests=\(requests) concurrency=\(concurrency) method=\(method) body=\(bodySize) sink=\(sink.rawValue)"
              + (cacheDirectory.map { " cache=\($0)" } ?? "") + (defaultCache ? " cache=default" : ""))
        if enqueueAll {
            let (finished, errors, bytes, wall) = QueuedMemory.run(url: url, requests: requests, concurrency: concurrency)
            print(String(format: "RESULT requests=%d errors=%d wall_s=%.6f rps=%.2f mbps=%.3f bytes=%lld",
                         finished, errors, wall, Double(finished - errors) / wall, Double(bytes) / 1e6 / wall, bytes))
            if errors > 0 { throw ExitCode(1) }
            return
        }
        try timedRun(target, body: body, policy: policy)
    }

    /// The harness's run: N requests through one queue, C at a time; the RESULT line last.
    private func timedRun(_ target: URL, body: Data?, policy: SecurityPolicy?) throws {
        let tally = Tally()
        let streams = CountingStreamPool()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = concurrency
        let responseSerializer = HTTPResponseSerializer()
        responseSerializer.acceptableStatusCodes = IndexSet(integersIn: 200..<400)
        let done = DispatchSemaphore(value: 0)
        let total = requests
        let serializer = HTTPRequestSerializer()
        let uploadURL = multipartFile.map { URL(fileURLWithPath: $0) }
        let cache = try cacheDirectory.map { try ToolCache.open($0, option: "--cache-dir") }
        let sent = uploadURL.map {
            (try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? NSNumber)?.int64Value ?? 0
        } ?? Int64(body?.count ?? 0)

        // Operations are made as the run goes: a window of them is queued at first, and each one that
        // finishes queues the next, so memory stays bounded by the window, not by N.
        // Every request but a multipart one (whose body stream is read once) is the same, so it is
        // built once and copied: corelibs' URLRequest setters cost more than the rest of the request.
        var template = URLRequest(url: target)
        if method != "GET" { template.httpMethod = method }
        if let body, uploadURL == nil {
            template.httpBody = body
            template.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        let nextDistinct = distinctFrom.map { Locked($0) }
        let makeOperation: @Sendable (Feeder) -> HTTPRequestOperation? = { [url, sink, template, policy, cache, defaultCache] feeder in
            var request = template
            if let nextDistinct {
                let number = nextDistinct.update { next in defer { next += 1 }; return next }
                request.url = URL(string: url + (url.contains("?") ? "&" : "?") + "n=\(number)")
            }
            if let uploadURL {
                guard let multipart = try? serializer.multipartFormRequest(method: "POST", urlString: url, parameters: nil, constructingBodyWith: {
                    try $0.appendPart(withFileURL: uploadURL, name: "file")
                }) else { return nil }
                request = multipart
            }
            let operation = HTTPRequestOperation(request: request)
            // Every request goes to the server, as the harness's other clients' do (none has a cache),
            // unless the run measures the cache (--cache-dir, or the library's default with --default-cache).
            if !defaultCache { operation.urlCache = cache }
            operation.responseSerializer = responseSerializer
            if let policy { operation.securityPolicy = policy }
            let stream = sink == .stream ? streams.take() : nil
            operation.outputStream = stream
            let counter = stream?.counted
            operation.setCompletionBlockWithSuccess({ operation, _ in
                // The transfer is over, so the count is final; the stream goes back to the pool when closed.
                let received = counter?.value.load(ordering: .acquiring) ?? Int64(operation.responseData?.count ?? 0)
                if tally.record(bytes: received + sent, failed: false) == total {
                    done.signal()
                }
                feeder.feed(1)
            }, failure: { operation, error in
                if tally.record(bytes: 0, failed: true, reason: Bench.reason(error, of: operation)) == total {
                    done.signal()
                }
                feeder.feed(1)
            })
            return operation
        }
        let feeder = Feeder(total: requests, queue: queue, make: makeOperation) {
            if tally.record(bytes: 0, failed: true, reason: "the multipart request could not be built") == total { done.signal() }
        }
        let start = DispatchTime.now()
        feeder.feed(max(2 * concurrency, 64))
        done.wait()
        let wall = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let (finished, errors, bytes) = tally.snapshot
        let rps = Double(finished - errors) / wall
        let mbps = Double(bytes) / 1e6 / wall
        tally.reportReasons(of: finished)
        print(String(format: "RESULT requests=%d errors=%d wall_s=%.6f rps=%.2f mbps=%.3f bytes=%lld",
                     finished, errors, wall, rps, mbps, bytes))
        if errors > 0 { throw ExitCode(1) }
    }
}

/// Makes and queues the run's operations a few at a time; how many are left is owned by a lock.
private final class Feeder: Sendable {
    private let remaining: Locked<Int>
    private let queue: OperationQueue
    private let make: @Sendable (Feeder) -> HTTPRequestOperation?
    private let unbuildable: @Sendable () -> Void

    init(total: Int, queue: OperationQueue, make: @escaping @Sendable (Feeder) -> HTTPRequestOperation?,
         unbuildable: @escaping @Sendable () -> Void) {
        remaining = Locked(total)
        self.queue = queue
        self.make = make
        self.unbuildable = unbuildable
    }

    /// Makes up to `count` more operations (fewer when the run has no more) and queues them.
    func feed(_ count: Int) {
        let taken = remaining.update { remaining in
            let taken = min(count, remaining)
            remaining -= taken
            return taken
        }
        guard taken > 0 else { return }
        var operations: [Operation] = []
        operations.reserveCapacity(taken)
        for _ in 0..<taken {
            if let operation = make(self) { operations.append(operation) } else { unbuildable() }
        }
        queue.addOperations(operations, waitUntilFinished: false)
    }
}

/// Counts finished requests; the counts are owned by a lock.
final class Tally: Sendable {
    private struct Counts {
        var finished = 0
        var errors = 0
        var bytes: Int64 = 0
        /// Why requests failed, with how many each (at most `maximumReasons` distinct ones, in order).
        var reasons: [(text: String, count: Int)] = []
    }

    private let counts = Locked(Counts())
    private static let maximumReasons = 5

    /// Records one request (`reason`: why it failed); returns how many have finished.
    func record(bytes: Int64, failed: Bool, reason: String? = nil) -> Int {
        counts.update { counts in
            counts.finished += 1
            if failed { counts.errors += 1 } else { counts.bytes += bytes }
            if failed, let reason {
                if let index = counts.reasons.firstIndex(where: { $0.text == reason }) {
                    counts.reasons[index].count += 1
                } else if counts.reasons.count < Tally.maximumReasons {
                    counts.reasons.append((reason, 1))
                }
            }
            return counts.finished
        }
    }

    var snapshot: (Int, Int, Int64) {
        let counts = counts.value
        return (counts.finished, counts.errors, counts.bytes)
    }

    /// One line on standard error per reason requests failed: `onet: bench: 3 of 20 failed: HTTP 500 …`.
    func reportReasons(of total: Int) {
        for (text, count) in counts.value.reasons {
            StandardStreams.write("onet: bench: \(count) of \(total) failed: \(text)\n", to: .standardError)
        }
    }
}

/// Counting streams of finished requests, handed to new ones: corelibs builds a CoreFoundation stream
/// for every `OutputStream`, costly to make and free, where the harness's other clients discard
/// bodies through a plain callback. A stream serves one request at a time: it comes back when the
/// operation closes it, after its completion block read the count. The idle streams are owned by a lock.
private final class CountingStreamPool: Sendable {
    private let idle = Locked<[CountingOutputStream]>([])

    /// A stream at zero, not open.
    func take() -> CountingOutputStream {
        idle.update { $0.popLast() } ?? CountingOutputStream(pool: self)
    }

    /// Takes back a closed stream, already at zero.
    fileprivate func giveBack(_ stream: CountingOutputStream) {
        idle.update { $0.append(stream) }
    }
}

/// An output stream that counts the bytes written to it into `counted` and keeps none: the harness's
/// "read every body, discard it". Written on the network thread, read and closed on the completion
/// queue after the transfer ended. Its count and status are atomics, not a lock: the harness's other
/// clients discard a body with no synchronization at all, so the client's own cost stays out of the
/// library's figures.
private final class CountingOutputStream: OutputStream {
    /// Bytes counted since the stream was last closed.
    let counted = ByteCount()
    /// `Stream.Status.rawValue`: `.notOpen` or `.open`.
    private let status = Atomic<UInt>(Stream.Status.notOpen.rawValue)
    /// Where the stream goes when closed (weak: the pool holds idle streams). Set once, at init.
    private weak var pool: CountingStreamPool?

    init(pool: CountingStreamPool) {
        self.pool = pool
        super.init(toMemory: ())
    }

    required init(toMemory: ()) {
        super.init(toMemory: ())
    }

    override func open() { status.store(Stream.Status.open.rawValue, ordering: .releasing) }

    /// Ends this request's use: the stream is at zero, not open, and back in its pool.
    override func close() {
        counted.value.store(0, ordering: .releasing)
        status.store(Stream.Status.notOpen.rawValue, ordering: .releasing)
        pool?.giveBack(self)
    }

    override var streamStatus: Stream.Status {
        Stream.Status(rawValue: status.load(ordering: .acquiring)) ?? .error
    }
    override var hasSpaceAvailable: Bool { true }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        counted.value.wrappingAdd(Int64(length), ordering: .acquiringAndReleasing)
        return length
    }
}

/// A byte count shared by a stream and the completion block that reads it.
private final class ByteCount: Sendable {
    /// Bytes written since the stream was last closed (final once the transfer ended).
    let value = Atomic<Int64>(0)
}
