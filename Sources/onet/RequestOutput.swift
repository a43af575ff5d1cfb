import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// One request as it went on the wire: the head the library sent (the request's fields and what the
/// transport adds — Host, Content-Length, the stored cookies, a challenge's Authorization) and its body.
struct SentRequest {
    /// The method.
    var method: String
    /// The URL.
    var url: URL
    /// The header fields, in the order shown.
    var headers: [(name: String, value: String)]
    /// The body, or `nil` when there is none (or it is streamed and not shown).
    var body: Data?
    /// A note in place of a body that is not shown (a multipart body streamed from files).
    var bodyNote: String?
}

/// A response head as received.
struct ReceivedHead {
    /// `1.1`, `2`, …
    var version: String
    /// The status code.
    var status: Int
    /// The header fields, sorted by name.
    var headers: [(name: String, value: String)]

    /// The head of `response`.
    init(_ response: HTTPURLResponse, version: String?) {
        self.version = version ?? "1.1"
        status = response.statusCode
        headers = response.allHeaderFields.compactMap { key, value -> (String, String)? in
            guard let name = key as? String else { return nil }
            return (name, "\(value)")
        }.sorted { $0.0.lowercased() < $1.0.lowercased() }
    }
}

/// What `--print`/`-p` selects (httpie's letters): `H` request head, `B` request body, `h` response
/// head, `b` response body, `m` metadata.
struct OutputSelection: Equatable {
    var requestHead = false, requestBody = false, responseHead = false, responseBody = false, meta = false

    /// Nothing selected.
    init() {}

    /// The selection the letters name; `nil` when one is not `HBhbm`.
    init?(letters: String) {
        for letter in letters {
            switch letter {
            case "H": requestHead = true
            case "B": requestBody = true
            case "h": responseHead = true
            case "b": responseBody = true
            case "m": meta = true
            default: return nil
            }
        }
    }

    /// Whether anything about the request is shown.
    var showsRequest: Bool { requestHead || requestBody }
}

/// Prints requests and responses the way httpie lays them out: heads as HTTP text, a blank line, the
/// body, a blank line between messages. Secret header values are shown as `***` (their scheme or
/// cookie names kept) unless `showSecrets`.
struct ExchangePrinter {
    /// Header fields whose values are secrets.
    static let secretHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// What to show.
    var selection: OutputSelection
    /// Where heads and bodies go: standard output, or standard error in download mode.
    var handle: FileHandle
    /// Whether `handle` is a terminal (JSON bodies indented and coloured there).
    var isTerminal: Bool
    /// Whether JSON bodies are indented (`--pretty=all|format`, or a terminal by default).
    var formats: Bool
    /// Whether output is coloured (`--pretty=all|colors`, or a terminal by default).
    var colours: Bool
    /// Whether secret header values are shown as they were sent.
    var showSecrets: Bool

    /// Writes the request's head and body as selected.
    func write(_ request: SentRequest) {
        var text = ""
        if selection.requestHead {
            var target = request.url.path.isEmpty ? "/" : request.url.path
            if let query = request.url.query { target += "?" + query }
            text += "\(request.method) \(target) HTTP/1.1\n"
            for field in request.headers { text += "\(field.name): \(shown(field.name, field.value))\n" }
            text += "\n"
        }
        if selection.requestBody {
            if let note = request.bodyNote {
                text += note + "\n\n"
            } else if let body = request.body, !body.isEmpty {
                text += bodyText(body, contentType: request.headers.first { $0.name.lowercased() == "content-type" }?.value)
                text += "\n\n"
            }
        }
        if !text.isEmpty { StandardStreams.write(text, to: handle) }
    }

    /// Writes a response head as selected.
    func write(_ head: ReceivedHead) {
        guard selection.responseHead else { return }
        var text = "HTTP/\(head.version) \(head.status) \(ResponsePrinter.reasonPhrase(head.status))\n"
        for field in head.headers { text += "\(field.name): \(field.value)\n" }
        StandardStreams.write(text + "\n", to: handle)
    }

    /// Writes a response body as selected; false when the stream refused it.
    func writeBody(_ body: Data, contentType: String?) -> Bool {
        guard selection.responseBody, !body.isEmpty else { return true }
        if !isTerminal && !formats { return StandardStreams.write(body, to: handle) }
        let text = bodyText(body, contentType: contentType)
        return StandardStreams.write(text.hasSuffix("\n") ? text : text + "\n", to: handle)
    }

    /// Writes the metadata lines: elapsed time and the transfer's timings.
    func writeMeta(_ metrics: TransferMetrics?, https: Bool) {
        guard selection.meta, let metrics else { return }
        StandardStreams.write(String(format: "Elapsed time: %.3fs\n", metrics.total) + TimingLine.text(metrics, https: https) + "\n\n",
                              to: handle)
    }

    /// A body as text: JSON indented (and coloured) when formatting, other text as it is, a note for
    /// binary data on a terminal.
    private func bodyText(_ body: Data, contentType: String?) -> String {
        let declaredJSON = contentType?.lowercased().contains("json") ?? false
        if formats, declaredJSON || body.first.map({ $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "[") }) ?? false,
           (try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])) != nil {
            return JSONHighlighter(colours: colours).format(body)
        }
        if let text = String(data: body, encoding: .utf8), !(isTerminal && text.contains("\u{0}")) { return text }
        if !isTerminal { return String(decoding: body, as: UTF8.self) }
        return "+-----------------------------------------+\n| NOTE: binary data not shown in terminal |\n"
            + "+-----------------------------------------+"
    }

    /// A header's value as shown: a secret's scheme (`Basic ***`) or cookie names (`a=***`) only.
    func shown(_ name: String, _ value: String) -> String {
        let lowered = name.lowercased()
        guard !showSecrets, ExchangePrinter.secretHeaders.contains(lowered) else { return value }
        if lowered == "cookie" {
            return value.components(separatedBy: "; ").map { pair in
                pair.split(separator: "=", maxSplits: 1).first.map { "\($0)=***" } ?? "***"
            }.joined(separator: "; ")
        }
        if let space = value.firstIndex(of: " ") { return String(value[..<space]) + " ***" }
        return "***"
    }
}

/// The transfer timings of `m`/`--meta` and `--verbose`: each phase's own duration within the last
/// attempt, never the time before it. The library measures every phase from the operation's first
/// attempt, so after a retry (or a redirect) the name lookup includes the earlier attempts and the
/// backoff; that time is reported as such, not as DNS.
enum TimingLine {
    /// `* 127.0.0.1: DNS 0.1 ms, connect 0.2 ms, …`.
    static func text(_ metrics: TransferMetrics, https: Bool) -> String {
        func ms(_ seconds: TimeInterval) -> String { String(format: "%.1f ms", max(0, seconds) * 1000) }
        let connected = max(metrics.connect, metrics.nameLookup)
        let secured = https ? max(metrics.tlsHandshake, connected) : connected
        var phases: [String] = []
        if metrics.attempts > 1 || metrics.redirectCount > 0 {
            // Only the sum is known: the earlier attempts, backoff, redirects and this hop's lookup.
            phases.append("before this hop (earlier attempts, backoff, redirects and DNS) \(ms(metrics.nameLookup))")
        } else {
            phases.append("DNS \(ms(metrics.nameLookup))")
        }
        phases.append("connect \(ms(connected - metrics.nameLookup))")
        if https { phases.append("TLS \(ms(secured - connected))") }
        phases.append("first byte \(ms(metrics.firstByte - secured))")
        phases.append("body \(ms(metrics.total - max(metrics.firstByte, secured)))")
        phases.append("total \(ms(metrics.total))")
        return "* \(metrics.remoteAddress ?? "?"): " + phases.joined(separator: ", ")
            + "; connection \(metrics.connectionReused ? "reused" : "new"), redirects \(metrics.redirectCount), "
            + "attempts \(metrics.attempts)"
    }
}
