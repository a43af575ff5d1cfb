import Foundation
import OperationNetworkingTestServer
import XCTest

/// One invocation httpie and `onet request` are both given, word for word.
struct ParityCase: Sendable {
    /// A short name; the deliberate differences are listed by it.
    let id: String
    /// The runs, in order, each with the same words for both tools (`{u}` is the server's base URL,
    /// `{port}` its port, `{tls}` the TLS server's base URL). Most cases have one; a session case two.
    let runs: [[String]]
    /// What standard input holds; `nil`: empty (most cases pass `--ignore-stdin` as httpie's docs advise).
    var stdin: String?
    /// Prepares the tool's working directory before its first run (files an item names).
    var prepare: (@Sendable (URL) throws -> Void)?

    init(_ id: String, _ words: [String], stdin: String? = nil, prepare: (@Sendable (URL) throws -> Void)? = nil) {
        self.id = id
        runs = [words]
        self.stdin = stdin
        self.prepare = prepare
    }

    init(_ id: String, runs: [[String]], prepare: (@Sendable (URL) throws -> Void)? = nil) {
        self.id = id
        self.runs = runs
        stdin = nil
        self.prepare = prepare
    }
}

/// What one tool did for a case: the requests the server received (normalised) and the exit statuses.
struct ParityOutcome: Equatable, CustomStringConvertible {
    /// One received request: method, target, header fields (sorted), body.
    struct Wire: Equatable {
        var method: String
        var uri: String
        var headers: [String]
        var body: Data
    }

    var requests: [Wire]
    var statuses: [Int32]

    var description: String {
        "statuses \(statuses)\n" + requests.map { wire in
            "  \(wire.method) \(wire.uri)\n" + wire.headers.map { "    \($0)\n" }.joined()
                + "    body: \(String(decoding: wire.body, as: UTF8.self).debugDescription)"
        }.joined(separator: "\n")
    }

    /// The server's records, normalised only where the two tools cannot agree by design: the
    /// `User-Agent` (each names itself), a multipart body's random boundary (and the `Content-Length`
    /// that follows from it), a Digest answer's random client nonce (and the response hash computed
    /// from it).
    static func normalised(_ records: [RecordedRequest]) -> [Wire] {
        records.map { record in
            var body = record.body
            var headers = record.headers.filter { $0.name.lowercased() != "user-agent" }
            if let type = record.header("Content-Type"), let range = type.range(of: "boundary=") {
                let boundary = String(type[range.upperBound...].prefix { $0 != ";" && $0 != " " })
                body = replacing(Data(boundary.utf8), with: Data("BOUNDARY".utf8), in: body)
                headers = headers.filter { $0.name.lowercased() != "content-length" }.map { field in
                    (field.name, field.value.replacingOccurrences(of: boundary, with: "BOUNDARY"))
                }
            }
            headers = headers.map { field in
                guard field.name.lowercased() == "authorization", field.value.hasPrefix("Digest ") else { return field }
                return (field.name, normalisedDigest(field.value))
            }
            let fields = headers.map { "\($0.name.lowercased()): \($0.value)" }.sorted()
            return Wire(method: record.method, uri: record.uri, headers: fields, body: body)
        }
    }

    /// A Digest answer's parameters, sorted, `cnonce` and `response` (random per run) blanked,
    /// values unquoted where RFC 7616 allows either spelling (`algorithm`, `qop`, `nc`).
    private static func normalisedDigest(_ value: String) -> String {
        var parameters: [String] = []
        for part in value.dropFirst(7).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            let name = pair[0].lowercased()
            let unquoted = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            parameters.append("\(name)=\(["cnonce", "response"].contains(name) ? "*" : unquoted)")
        }
        return "Digest " + parameters.sorted().joined(separator: ", ")
    }

    private static func replacing(_ target: Data, with replacement: Data, in data: Data) -> Data {
        guard !target.isEmpty else { return data }
        var result = Data()
        var rest = data[...]
        while let range = rest.range(of: target) {
            result.append(rest[..<range.lowerBound])
            result.append(replacement)
            rest = rest[range.upperBound...]
        }
        result.append(rest)
        return result
    }
}

/// Runs httpie and onet for parity cases against the test servers.
struct ParityRunner {
    /// httpie's `http`, from Debian's `httpie` package (scripts/setup installs it).
    static let httpie = "/usr/bin/http"

    let server: TestServer
    let tlsServer: TestServer?
    let onet: URL

    /// Both tools' outcomes for `parityCase`, each in a fresh working directory and `HOME`.
    func outcomes(_ parityCase: ParityCase) throws -> (httpie: ParityOutcome, onet: ParityOutcome) {
        let httpieOutcome = try outcome(parityCase, executable: URL(fileURLWithPath: ParityRunner.httpie), prefix: [])
        let onetOutcome = try outcome(parityCase, executable: onet, prefix: ["request"])
        return (httpieOutcome, onetOutcome)
    }

    private func outcome(_ parityCase: ParityCase, executable: URL, prefix: [String]) throws -> ParityOutcome {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parity-\(UUID().uuidString)")
        let home = directory.appendingPathComponent("home")
        let work = directory.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("hello\n".utf8).write(to: work.appendingPathComponent("a.txt"))
        try Data("{\"k\": [1, 2]}".utf8).write(to: work.appendingPathComponent("d.json"))
        try Data([0, 1, 0x62, 0x69, 0x6E]).write(to: work.appendingPathComponent("b.bin"))
        try parityCase.prepare?(work)
        server.clearLog()
        tlsServer?.clearLog()
        var statuses: [Int32] = []
        for words in parityCase.runs {
            statuses.append(try run(executable, prefix + words.map(substituted), stdin: parityCase.stdin, directory: work, home: home))
        }
        let records = server.requests + (tlsServer?.requests ?? [])
        return ParityOutcome(requests: ParityOutcome.normalised(records), statuses: statuses)
    }

    private func substituted(_ word: String) -> String {
        word.replacingOccurrences(of: "{u}", with: server.baseURL.absoluteString)
            .replacingOccurrences(of: "{port}", with: String(server.port))
            .replacingOccurrences(of: "{tls}", with: tlsServer.map { "https://localhost:\($0.port)" } ?? "")
    }

    /// Runs one tool to its end; its exit status.
    private func run(_ executable: URL, _ arguments: [String], stdin: String?, directory: URL, home: URL) throws -> Int32 {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        var environment = onetEnvironment()
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY", "XDG_CONFIG_HOME"] {
            environment[name] = nil
        }
        environment["HOME"] = home.path
        environment["LC_ALL"] = "C.UTF-8"
        process.environment = environment
        let input = Pipe()
        process.standardInput = input
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        try input.fileHandleForWriting.write(contentsOf: Data((stdin ?? "").utf8))
        try input.fileHandleForWriting.close()
        guard exited.wait(timeout: .now() + 60) == .success else {
            process.terminate()
            throw ParityError(description: "\(executable.lastPathComponent) \(arguments) did not exit within 60 s")
        }
        return process.terminationStatus
    }
}

struct ParityError: Error, CustomStringConvertible {
    let description: String
}
