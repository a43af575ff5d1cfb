import ArgumentParser
import Dispatch
import Foundation
import OperationNetworkingTestServer

/// `onet serve`: the demo's embedded loopback server on its own, to try `onet request` and
/// `onet fetch` without a network.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the embedded loopback test server (127.0.0.1 only) until Ctrl-C or --seconds.",
        discussion: ServeHelp.discussion)

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    func run() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        // Written directly (not buffered by print) so that a script reading the pipe sees it at once.
        StandardStreams.write("Serving on \(server.baseURL.absoluteString)\n", to: .standardOutput)
        let stop = DispatchSemaphore(value: 0)
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let sources = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        if let seconds {
            _ = stop.wait(timeout: .now() + seconds)
        } else {
            stop.wait()
        }
        sources.forEach { $0.cancel() }
        print("Served \(server.requests.count) request(s).")
    }
}

/// `onet serve --help`: every route the server answers, its query parameters and one example each,
/// written from `RouteCatalog` (the list the tests hold against the server's dispatch).
enum ServeHelp {
    static let discussion: String = {
        var text = "Prints its base URL first (BASE below). Routes, with their query parameters and an example each:\n"
        for route in RouteCatalog.routes {
            text += "\n  \(route.path): \(route.summary)\n"
            for parameter in route.parameters { text += "    \(parameter.name)=  \(parameter.meaning)\n" }
            text += "    example: onet request 'BASE\(route.example)'\n"
        }
        return text + """

        Examples:
          onet serve
          onet serve --seconds 60 &
          onet request http://127.0.0.1:PORT/echo name=Ada
          onet request -d -o big.bin 'http://127.0.0.1:PORT/bytes/10485760?chunkSize=65536&chunkDelayMs=100'
        """
    }()
}
