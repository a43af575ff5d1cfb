import ArgumentParser
import Dispatch
import Foundation
import OperationNetworking
import OperationNetworkingTestServer

/// `onet soak`: many mixed operations against the embedded loopback server, reporting the process's
/// memory, descriptors and threads at checkpoints and checking that every operation called exactly one
/// handler. A held-up or repeated handler, or descriptors that keep growing, fail the run (exit 1).
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run mixed operations (successes, 404s, uploads, redirects, cancels, refused connections) and report resources.",
        discussion: """
            Examples:
              onet soak                                  # 100,000 operations, 64 at a time
              onet soak --operations 10000               # the run CI makes
              onet soak --operations 300000 --checkpoints 100000,200000,300000
            """)

    @Option(help: "Operations in all.") var operations = 100_000
    @Option(help: "Operations in flight at most (the queue's maxConcurrentOperationCount).") var concurrency = 64
    @Option(help: "Report after these many operations finished (comma-separated).")
    var checkpoints = "10000,50000,100000"
    @Option(help: "Descriptors the process may gain between the first checkpoint and the end.")
    var descriptorSlack = 32
    @Flag(name: .customLong("no-cache"), help: "Operations without an HTTP cache (urlCache = nil); by default they keep the library's default cache.")
    var noCache = false

    func validate() throws {
        guard operations > 0, concurrency > 0 else { throw ValidationError("--operations and --concurrency must be positive.") }
    }

    func run() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let marks = Set(checkpoints.split(separator: ",").compactMap { Int($0) }.filter { $0 <= operations } + [operations])
        let ledger = Ledger(count: operations)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = concurrency
        // Enough enqueued ahead to keep the queue busy, few enough that the library's memory shows.
        let window = DispatchSemaphore(value: concurrency * 4)
        let serializer = HTTPRequestSerializer()
        let start = DispatchTime.now()
        var reports: [Resources] = []
        print("# onet soak operations=\(operations) concurrency=\(concurrency) cache=\(noCache ? "none" : "default") server=\(server.baseURL.absoluteString)")
        for index in 0..<operations {
            window.wait()
            let operation = Soak.operation(index, server: server, serializer: serializer)
            if noCache { operation.urlCache = nil }
            operation.setCompletionBlockWithSuccess({ _, _ in
                ledger.record(index, ok: true)
                window.signal()
            }, failure: { _, _ in
                ledger.record(index, ok: false)
                window.signal()
            })
            queue.addOperation(operation)
            if index % 10 == 7 { operation.cancel() }   // cancelled as soon as it is enqueued
            if (index + 1) % 5_000 == 0 { server.clearLog() }   // the server's own log is not the library's memory
            if marks.contains(index + 1) {
                queue.waitUntilAllOperationsAreFinished()
                ledger.waitUntilAllHandled(upTo: index + 1)
                let now = Resources.current(finished: index + 1, ledger: ledger, since: start)
                reports.append(now)
                print(now.line)
            }
        }
        let wrong = ledger.operationsWithoutExactlyOneHandler()
        let grown = (reports.last?.descriptors ?? 0) - (reports.first?.descriptors ?? 0)
        let verdict = wrong.isEmpty && grown <= descriptorSlack
        print("soak: \(verdict ? "PASS" : "FAIL") operations=\(operations) handlers_not_once=\(wrong.count)"
              + " descriptors_grown=\(grown) (allowed \(descriptorSlack))")
        if !verdict { throw ExitCode.failure }
    }

    /// The mix, by index: half small GETs, then a 404, an 8 KiB upload, a cancel, a redirect chain and
    /// a refused connection in every ten.
    private static func operation(_ index: Int, server: TestServer, serializer: HTTPRequestSerializer) -> HTTPRequestOperation {
        var request: URLRequest
        switch index % 10 {
        case 5: request = URLRequest(url: server.url("/status/404"))
        case 6:
            request = URLRequest(url: server.url("/upload"))
            request.httpMethod = "POST"
            request.httpBody = Data(repeating: 0x61, count: 8_192)
        case 7: request = URLRequest(url: server.url("/delay/20"))
        case 8: request = URLRequest(url: server.url("/redirect/2"))
        case 9: request = URLRequest(url: URL(string: "http://127.0.0.1:1/") ?? server.url("/"))
        default: request = URLRequest(url: server.url("/bytes/1024"))
        }
        request.timeoutInterval = 10
        return HTTPRequestOperation(request: request)
    }
}

/// Handler calls per operation, owned by a condition lock that also wakes the waiter.
private final class Ledger: @unchecked Sendable {
    private struct Counts {
        var calls: [UInt8]
        var handled = 0
        var succeeded = 0
    }

    private let condition = NSCondition()
    /// Reached only through `withCounts`, which holds `condition`.
    private var counts: Counts

    init(count: Int) { counts = Counts(calls: [UInt8](repeating: 0, count: count)) }

    private func withCounts<Result>(_ body: (inout Counts) -> Result) -> Result {
        condition.withLock { body(&counts) }
    }

    func record(_ index: Int, ok: Bool) {
        withCounts { counts in
            counts.calls[index] = counts.calls[index] &+ 1
            counts.handled += 1
            if ok { counts.succeeded += 1 }
        }
        condition.broadcast()
    }

    /// Waits (bounded) until `count` handler calls happened.
    func waitUntilAllHandled(upTo count: Int) {
        let deadline = Date().addingTimeInterval(30)
        condition.withLock {
            while counts.handled < count && condition.wait(until: deadline) {}
        }
    }

    var totals: (handled: Int, succeeded: Int) { withCounts { ($0.handled, $0.succeeded) } }

    func operationsWithoutExactlyOneHandler() -> [Int] {
        withCounts { counts in counts.calls.indices.filter { counts.calls[$0] != 1 } }
    }
}

/// The process's resources at a checkpoint, read from /proc.
private struct Resources {
    var finished: Int
    var handled: Int
    var succeeded: Int
    var residentKiB: Int
    var descriptors: Int
    var threads: Int
    var seconds: Double

    static func current(finished: Int, ledger: Ledger, since start: DispatchTime) -> Resources {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? -1
        }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
        let (handled, succeeded) = ledger.totals
        return Resources(finished: finished, handled: handled, succeeded: succeeded, residentKiB: field("VmRSS"),
                         descriptors: descriptors, threads: field("Threads"),
                         seconds: Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
    }

    var line: String {
        String(format: "ops=%d handlers=%d succeeded=%d rss_kib=%d descriptors=%d threads=%d elapsed_s=%.1f ops_per_s=%.0f",
               finished, handled, succeeded, residentKiB, descriptors, threads, seconds, Double(finished) / max(seconds, 1e-9))
    }
}
