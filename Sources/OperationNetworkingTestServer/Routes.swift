import Foundation
import NIOCore
import NIOHTTP1

/// The JSON document `/echo` answers with.
private struct EchoPayload: Encodable {
    let method: String
    let uri: String
    let path: String
    let query: [String: String]
    /// `[[name, value], ...]` in wire order; pairs rather than an object so duplicates survive.
    let headers: [[String]]
    /// The body as UTF-8, or `""` when it is not valid UTF-8 (use `bodyLength` then).
    let body: String
    let bodyLength: Int
}

/// The JSON document `/upload` answers with.
private struct UploadPayload: Encodable {
    let bodyLength: Int
}

extension TestServerHandler {
    /// Dispatches on the path; anything unknown gets a 404.
    func route(context: ChannelHandlerContext, request: IncomingRequest) {
        let segments = request.uri.path.split(separator: "/").map(String.init)
        let name = segments.first ?? ""
        let argument = segments.count == 2 ? segments[1] : ""
        switch (name, segments.count) {
        case ("echo", 1): echo(context, request)
        case ("flaky", 3): flaky(context, request, failures: segments[1])
        case ("status", 2): status(context, request, argument)
        case ("delay", 2): delay(context, request, argument)
        case ("bytes", 2): serveBytes(context, request, argument)
        case ("chunked", 2): serveChunked(context, request, argument)
        case ("gzip", 1): serveGzipText(context, request)
        case ("brotli", 2): serveEncoded(context, request, .brotli, argument)
        case ("zstd", 2): serveEncoded(context, request, .zstd, argument)
        case ("redirect", 2): redirectCountdown(context, request, argument)
        case ("redirect-to", 1): redirectTo(context, request)
        case ("redirect-loop", 1): redirect(context, request, to: "/redirect-loop", status: .found)
        case ("drop", 2): drop(context, request, argument)
        case ("stall", 1): stall(context, request)
        case ("claims", 2): claimLength(context, request, argument)
        case ("stall-headers", 1): break  // logged already; deliberately never answered
        case ("huge-headers", 2): hugeHeaders(context, request, argument)
        case ("cookies", 2) where argument == "set": setCookies(context, request)
        case ("cookies", 2) where argument == "raw": setRawCookies(context, request)
        case ("upload", 1): respondJSON(context, request, UploadPayload(bodyLength: request.record.body.count))
        case ("sink", 1): respondJSON(context, request, UploadPayload(bodyLength: discardedBytes))
        case ("close", 1): respondText(context, request, .ok, "bye", close: true)
        case ("auth", _): authRoute(context, request, segments)
        case ("bearer", 2): bearerRoute(context, request, argument)
        case ("refresh", 2): refreshRoute(context, request, argument)
        case ("cache", 2): serveCacheResource(context, request, argument)
        default: respondText(context, request, .notFound, "not found\n")
        }
    }

    /// Answers 400 for a malformed route argument.
    func badRequest(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ why: String) {
        respondText(context, request, .badRequest, "bad request: \(why)\n")
    }

    /// Parses a route argument as an integer within `range`.
    func integer(_ text: String, in range: ClosedRange<Int>) -> Int? {
        guard let value = Int(text), range.contains(value) else { return nil }
        return value
    }

    /// Query values end up in response headers, where NIO rejects control characters (and CR/LF
    /// would split the header). Filtered per scalar: "\r\n" is a single Swift Character.
    func headerSafe(_ value: String) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: value.unicodeScalars.filter { ($0.value >= 0x20 && $0.value != 0x7F) || $0 == "\t" })
        return String(scalars)
    }

    // MARK: - Routes

    private func echo(_ context: ChannelHandlerContext, _ request: IncomingRequest) {
        let record = request.record
        let payload = EchoPayload(
            method: record.method,
            uri: record.uri,
            path: record.path,
            query: record.query,
            headers: record.headers.map { [$0.name, $0.value] },
            body: String(data: record.body, encoding: .utf8) ?? "",
            bodyLength: record.body.count
        )
        respondJSON(context, request, payload)
    }

    private func status(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        // 1xx would be read as an interim response, leaving the client waiting for a final one.
        guard let code = integer(argument, in: 200...999) else {
            return badRequest(context, request, "status must be 200...999")
        }
        let query = request.uri.query
        var headers = HTTPHeaders()
        if let location = query["location"] {
            headers.add(name: "Location", value: headerSafe(location))
        }
        respondText(
            context,
            request,
            HTTPResponseStatus(statusCode: code),
            query["body"] ?? "{\"status\":\(code)}",
            contentType: headerSafe(query["contentType"] ?? "application/json"),
            headers: headers
        )
    }

    /// `/flaky/<n>/<key>`: the first `n` requests to this path get `?status=` (503 by default, with
    /// `Retry-After: ?retryAfter=` when given), the later ones 200 — for retry tests. The body says which
    /// request of the path it answers ("failure 1", "success 3").
    private func flaky(_ context: ChannelHandlerContext, _ request: IncomingRequest, failures: String) {
        guard let failures = integer(failures, in: 0...1_000) else {
            return badRequest(context, request, "failures must be 0...1000")
        }
        let seen = state.requests.filter { $0.path == request.record.path }.count
        guard seen <= failures else { return respondText(context, request, .ok, "success \(seen)") }
        let status = request.uri.query["status"].flatMap { integer($0, in: 400...599) } ?? 503
        var headers = HTTPHeaders()
        if let retryAfter = request.uri.query["retryAfter"] { headers.add(name: "Retry-After", value: headerSafe(retryAfter)) }
        respondText(context, request, HTTPResponseStatus(statusCode: status), "failure \(seen)", headers: headers)
    }

    private func delay(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        guard let milliseconds = integer(argument, in: 0...600_000) else {
            return badRequest(context, request, "delay must be 0...600000 ms")
        }
        schedule(context, after: milliseconds) {
            self.respondText(context, request, .ok, "delayed")
        }
    }

    /// The redirect status from `?status=`, 302 by default; `nil` when it is not a 3xx.
    private func redirectStatus(_ request: IncomingRequest) -> HTTPResponseStatus? {
        guard let text = request.uri.query["status"] else { return .found }
        guard let code = integer(text, in: 300...399) else { return nil }
        return HTTPResponseStatus(statusCode: code)
    }

    private func redirect(
        _ context: ChannelHandlerContext,
        _ request: IncomingRequest,
        to location: String,
        status: HTTPResponseStatus
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Location", value: headerSafe(location))
        respond(context, request, status, headers: headers)
    }

    private func redirectCountdown(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        guard let remaining = integer(argument, in: 0...100_000) else {
            return badRequest(context, request, "redirect count must be 0...100000")
        }
        guard remaining > 0 else { return echo(context, request) }
        guard let status = redirectStatus(request) else {
            return badRequest(context, request, "status must be 3xx")
        }
        let query = request.uri.rawQuery.map { "?" + $0 } ?? ""
        redirect(context, request, to: "/redirect/\(remaining - 1)\(query)", status: status)
    }

    private func redirectTo(_ context: ChannelHandlerContext, _ request: IncomingRequest) {
        guard let target = request.uri.query["url"], !target.isEmpty else {
            return badRequest(context, request, "missing url=")
        }
        guard let status = redirectStatus(request) else {
            return badRequest(context, request, "status must be 3xx")
        }
        redirect(context, request, to: target, status: status)
    }

    private func hugeHeaders(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        guard let kilobytes = integer(argument, in: 0...65_536) else {
            return badRequest(context, request, "size must be 0...65536 KiB")
        }
        let filler = String(repeating: "a", count: 900)
        // Each "X-Filler-<i>: <900 a>\r\n" line is about 915 bytes on the wire.
        let lineSize = 915
        let count = (kilobytes * 1024 + lineSize - 1) / lineSize
        var headers = HTTPHeaders()
        headers.reserveCapacity(count)
        for index in 0..<count {
            headers.add(name: "X-Filler-\(index)", value: filler)
        }
        respondText(context, request, .ok, "ok", headers: headers)
    }

    private func setCookies(_ context: ChannelHandlerContext, _ request: IncomingRequest) {
        var headers = HTTPHeaders()
        for item in request.uri.items {
            headers.add(name: "Set-Cookie", value: headerSafe("\(item.name)=\(item.value); Path=/"))
        }
        respondText(context, request, .ok, "ok", headers: headers)
    }

    /// `/cookies/raw?set=<field value>&set=...`: one `Set-Cookie` per `set` item, its value exactly as
    /// given (attributes included), for the tests of which cookies a client accepts.
    private func setRawCookies(_ context: ChannelHandlerContext, _ request: IncomingRequest) {
        var headers = HTTPHeaders()
        for item in request.uri.items where item.name == "set" {
            headers.add(name: "Set-Cookie", value: headerSafe(item.value))
        }
        respondText(context, request, .ok, "ok", headers: headers)
    }
}
