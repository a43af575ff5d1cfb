import ArgumentParser
import Dispatch
import Foundation
import OperationNetworkingTestServer

/// `onet serve`: the demo's embedded loopback server on its own, to try `onet request` and
/// `onet fetch` without a network.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the embedded loopback test server (127.0.0.1 only, HTTP or HTTPS) until Ctrl-C or --seconds.",
        discussion: ServeHelp.discussion)

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var seconds: Double?

    @Option(help: ArgumentHelp("Listen on this port (default: one the kernel chooses).", valueName: "N"))
    var port: Int = 0

    @Flag(help: """
        Serve HTTPS with a CA and a certificate made for this run, and print where their PEM files are \
        (removed when the server stops), to try --cacert and --pin-cert offline.
        """)
    var tls = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535.") }
    }

    func run() throws {
        let certificates = try tls ? ServeCertificates() : nil
        defer { certificates?.remove() }
        let server: TestServer
        do {
            server = try TestServer(port: port, tls: certificates?.identity)
        } catch {
            // A port in use is the likely reason: one line naming the port, not the usage text.
            StandardStreams.write("onet: error: cannot serve on 127.0.0.1 port \(port): \(error)\n", to: .standardError)
            throw ExitCode(1)
        }
        defer { server.shutdown() }
        // Written directly (not buffered by print) so that a script reading the pipe sees it at once;
        // the URL's line first, as scripts read it.
        StandardStreams.write("Serving on \(server.baseURL.absoluteString)\n" + (certificates?.description ?? ""),
                              to: .standardOutput)
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
        var text = "Prints its base URL first (BASE below); with --tls, then the CA's and the server's certificate files. Routes, with their query parameters and an example each:\n"
        for route in RouteCatalog.routes {
            text += "\n  \(route.path): \(route.summary)\n"
            for parameter in route.parameters { text += "    \(parameter.name)=  \(parameter.meaning)\n" }
            text += "    example: onet request 'BASE\(route.example)'\n"
        }
        return text + """

        Examples:
          onet serve
          onet serve --seconds 60 &
          onet serve --tls --port 8443
          onet request --cacert CA_FILE https://127.0.0.1:8443/echo name=Ada
          onet request http://127.0.0.1:PORT/echo name=Ada
          onet request -d -o big.bin 'http://127.0.0.1:PORT/bytes/10485760?chunkSize=65536&chunkDelayMs=100'
        """
    }()
}
