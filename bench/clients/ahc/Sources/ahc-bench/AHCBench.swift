// ahc-bench: the benchmark's AsyncHTTPClient client. It speaks the interface every client of
// `bench/run` speaks (bench/README.md): N requests with at most C in flight, every body read and
// counted, and the RESULT line last.
//
// C child tasks each send their share of the N requests back to back through one `HTTPClient` on
// NIO's shared event loop group. The pool may open up to C HTTP/1.1 connections (`--max-host-conns`
// lowers that). HTTP/1.1 only, unless the environment has BENCH_H2=1 (the HTTP/2 workloads): then
// ALPN picks HTTP/2. `--cacert FILE` trusts FILE's certificates besides the system's.
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// A command line the client cannot run.
struct UsageError: Error {
    let message: String
}

/// What one run asks for.
struct Options: Sendable {
    var url = ""
    var requests = 1000
    var concurrency = 1
    var post = false
    var bodySize = 0
    var maxHostConnections = 0
    var caFile: String?
    var http2 = false

    static let usage = "usage: ahc-bench --url URL --requests N --concurrency C [--method GET|POST] "
        + "[--body-size BYTES] [--max-host-conns K] [--cacert FILE]"

    /// The options `arguments` give, each flag followed by its value.
    static func parse(_ arguments: [String], environment: [String: String]) throws(UsageError) -> Options {
        var options = Options()
        options.http2 = environment["BENCH_H2"] == "1"
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw UsageError(message: "\(flag) needs a value") }
            switch flag {
            case "--url": options.url = value
            case "--requests": options.requests = try count(value, flag, least: 1)
            case "--concurrency": options.concurrency = try count(value, flag, least: 1)
            case "--body-size": options.bodySize = try count(value, flag, least: 0)
            case "--max-host-conns": options.maxHostConnections = try count(value, flag, least: 0)
            case "--cacert": options.caFile = value
            case "--method":
                guard ["GET", "POST"].contains(value.uppercased()) else {
                    throw UsageError(message: "--method must be GET or POST, not \(value)")
                }
                options.post = value.uppercased() == "POST"
            default: throw UsageError(message: "unknown option \(flag)")
            }
        }
        guard !options.url.isEmpty else { throw UsageError(message: "--url is required") }
        if let caFile = options.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw UsageError(message: "--cacert: cannot read \(caFile)")
        }
        if options.maxHostConnections == 0 { options.maxHostConnections = options.concurrency }
        return options
    }

    private static func count(_ value: String, _ flag: String, least: Int) throws(UsageError) -> Int {
        guard let number = Int(value), number >= least else {
            throw UsageError(message: "\(flag) needs a whole number of at least \(least), not \(value)")
        }
        return number
    }
}

/// Requests finished, failed, and bytes moved by the successful ones (body received plus body sent).
struct Tally: Sendable {
    var finished = 0
    var errors = 0
    var bytes = 0

    mutating func add(_ other: Tally) {
        finished += other.finished
        errors += other.errors
        bytes += other.bytes
    }
}

@main
enum AHCBench {
    static func main() async {
        let options: Options
        do {
            options = try Options.parse(Array(CommandLine.arguments.dropFirst()),
                                        environment: ProcessInfo.processInfo.environment)
        } catch {
            printError("ahc-bench: \(error.message)\n\(Options.usage)")
            exit(2)
        }
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                                configuration: configuration(for: options))
        let body = options.post ? ByteBuffer(repeating: UInt8(ascii: "x"), count: options.bodySize) : nil
        let workers = min(options.concurrency, options.requests)

        let start = ContinuousClock.now
        let total = await withTaskGroup(of: Tally.self) { group in
            for index in 0..<workers {
                let share = options.requests / workers + (index < options.requests % workers ? 1 : 0)
                group.addTask { await send(share, through: client, options: options, body: body) }
            }
            var sum = Tally()
            for await tally in group { sum.add(tally) }
            return sum
        }
        let elapsed = ContinuousClock.now - start
        try? await client.shutdown()

        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("# client=ahc concurrency=\(options.concurrency) max_host_conns=\(options.maxHostConnections) "
              + "http=\(options.http2 ? "auto" : "1.1") cacert=\(options.caFile ?? "-")")
        print(String(format: "RESULT requests=%d errors=%d wall_s=%.6f rps=%.2f mbps=%.3f bytes=%d",
                     total.finished, total.errors, wall, Double(total.finished - total.errors) / wall,
                     Double(total.bytes) / 1e6 / wall, total.bytes))
        exit(total.errors == 0 ? 0 : 1)
    }

    /// The client as a user tuning it for throughput would make it: no redirects, no decompression,
    /// a pool as wide as the concurrency.
    static func configuration(for options: Options) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = options.http2 ? .automatic : .http1Only
        configuration.decompression = .disabled
        configuration.redirectConfiguration = .disallow
        configuration.timeout = .init(connect: .seconds(30), read: .seconds(60))
        configuration.connectionPool = .init(idleTimeout: .seconds(120),
                                             concurrentHTTP1ConnectionsPerHostSoftLimit: options.maxHostConnections)
        if let caFile = options.caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caFile)]
            configuration.tlsConfiguration = tls
        }
        return configuration
    }

    /// Sends `count` requests one after another, reading each body whole.
    static func send(_ count: Int, through client: HTTPClient, options: Options, body: ByteBuffer?) async -> Tally {
        var tally = Tally()
        for _ in 0..<count {
            var request = HTTPClientRequest(url: options.url)
            if let body {
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/octet-stream")
                request.body = .bytes(body)
            }
            tally.finished += 1
            do {
                let response = try await client.execute(request, timeout: .seconds(60))
                var received = 0
                for try await chunk in response.body { received += chunk.readableBytes }
                if (200..<400).contains(Int(response.status.code)) {
                    tally.bytes += received + (body?.readableBytes ?? 0)
                } else {
                    tally.errors += 1
                    if tally.errors <= 3 { printError("error: status \(response.status.code)") }
                }
            } catch {
                tally.errors += 1
                if tally.errors <= 3 { printError("error: \(error)") }
            }
        }
        return tally
    }

    static func printError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
