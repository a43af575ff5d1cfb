import Foundation
import NIOCore
import NIOHTTP1

/// How a pattern body is written: all at once, or throttled in pieces.
private struct BodyStream {
    /// Next absolute offset to send.
    var next: Int
    /// One past the last offset to send.
    let end: Int
    /// Bytes per write.
    let chunkSize: Int
    /// Pause between writes; 0 writes every piece at once (each flushed separately).
    let delayMilliseconds: Int
    /// Whether the connection closes after `.end`.
    let close: Bool
}

/// The fixed Last-Modified of every `/bytes` resource, also accepted as an `If-Range` validator.
private let lastModified = "Wed, 21 Oct 2015 07:28:00 GMT"

/// Bodies are generated in memory, so keep a malicious or mistyped size from exhausting it.
private let maximumResourceSize = 1 << 30

extension TestServerHandler {
    /// `/bytes/<n>`: the pattern resource with validators and single-range support; `headDelayMs=`
    /// holds the response head back that long (a client can pause before any byte arrived).
    func serveBytes(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        guard let length = integer(argument, in: 0...maximumResourceSize) else {
            return badRequest(context, request, "size must be 0...\(maximumResourceSize)")
        }
        if let delay = request.uri.int("headDelayMs"), delay > 0 {
            return schedule(context, after: min(delay, 60_000)) {
                self.serveBytes(context, request, length)
            }
        }
        serveBytes(context, request, length)
    }

    private func serveBytes(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ length: Int) {
        let query = request.uri.query
        let etag = query["etag"].map { quotedETag(headerSafe($0)) } ?? "\"bytes-\(length)\""
        let ignoreRange = query["ignoreRange"] == "1"

        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        if !ignoreRange {
            headers.add(name: "Accept-Ranges", value: "bytes")
        }
        headers.add(name: "ETag", value: etag)
        headers.add(name: "Last-Modified", value: lastModified)

        var range = ignoreRange ? .ignore : ByteRangeRequest(header: request.record.header("Range"), length: length)
        // If-Range: the range only applies while the client's validator still matches.
        if let validator = request.record.header("If-Range")?.trimmingCharacters(in: .whitespaces),
            validator != etag, validator != lastModified
        {
            range = .ignore
        }

        switch range {
        case .ignore:
            sendPattern(context, request, .ok, 0..<length, headers: headers)
        case .satisfiable(var bytes):
            // Faults a continuation must catch: `rangeSkew=N` answers from N bytes past the asked start
            // (and says so in Content-Range), `rangeShort=N` ends N bytes before the resource does.
            let skew = min(max(query["rangeSkew"].flatMap { Int($0) } ?? 0, 0), bytes.count - 1)
            let short = min(max(query["rangeShort"].flatMap { Int($0) } ?? 0, 0), bytes.count - 1 - skew)
            bytes = (bytes.lowerBound + skew)...(bytes.upperBound - short)
            headers.add(name: "Content-Range", value: "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(length)")
            sendPattern(context, request, .partialContent, bytes.lowerBound..<(bytes.upperBound + 1), headers: headers)
        case .unsatisfiable:
            headers.add(name: "Content-Range", value: "bytes */\(length)")
            respond(context, request, .rangeNotSatisfiable, headers: headers)
        }
    }

    /// `/chunked/<n>`: the pattern with chunked transfer encoding, one flushed write per chunk.
    func serveChunked(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        guard let length = integer(argument, in: 0...maximumResourceSize) else {
            return badRequest(context, request, "size must be 0...\(maximumResourceSize)")
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        // HTTP/1.0 has no chunked coding: send the raw body there, delimited by closing.
        let http10 = request.head.version.minor == 0
        if !http10 {
            headers.add(name: "Transfer-Encoding", value: "chunked")
        }
        let (head, close) = makeHead(request, .ok, headers, close: http10)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.isHead {
            return finish(context, close: close)
        }
        let query = request.uri
        let stream = BodyStream(
            next: 0,
            end: length,
            chunkSize: query.int("chunkSize").map { min(max($0, 1), maximumResourceSize) } ?? 1000,
            delayMilliseconds: query.int("chunkDelayMs").map { min(max($0, 0), 60_000) } ?? 0,
            close: close
        )
        context.flush()
        pump(context, stream)
    }

    /// `/drop/<n>`: promises 2n bytes, sends n, then closes — a server dying mid-body.
    func drop(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        guard let length = integer(argument, in: 0...(maximumResourceSize / 2)) else {
            return badRequest(context, request, "size must be 0...\(maximumResourceSize / 2)")
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Content-Length", value: String(2 * length))
        let (head, _) = makeHead(request, .ok, headers, close: false)
        // Close only once the last write completed; closing earlier would discard queued bytes.
        let lastWrite: EventLoopFuture<Void>
        if !request.isHead, length > 0 {
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            let body = BytePattern.buffer(0..<length, allocator: context.channel.allocator)
            lastWrite = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(body))))
        } else {
            lastWrite = context.writeAndFlush(wrapOutboundOut(.head(head)))
        }
        // No `.end`: the message is deliberately left incomplete when the connection goes away.
        let channel = context.channel
        lastWrite.whenComplete { _ in channel.close(promise: nil) }
    }

    /// `/stall`: promises 1,000,000 bytes, sends 100, then goes silent until closed.
    func stall(_ context: ChannelHandlerContext, _ request: IncomingRequest) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Content-Length", value: "1000000")
        let (head, _) = makeHead(request, .ok, headers, close: false)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !request.isHead {
            let body = BytePattern.buffer(0..<100, allocator: context.channel.allocator)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        context.flush()
    }

    /// `/claims/<n>`: a server that lies: `Content-Length: n` (any non-negative 64-bit value), then 100
    /// pattern bytes, then the connection closes.
    func claimLength(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ argument: String) {
        guard let declared = Int64(argument), declared >= 0 else {
            return badRequest(context, request, "length must be 0...\(Int64.max)")
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Content-Length", value: String(declared))
        let (head, _) = makeHead(request, .ok, headers, close: true)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let body = BytePattern.buffer(0..<100, allocator: context.channel.allocator)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(body)))).whenComplete { _ in channel.close(promise: nil) }
    }

    // MARK: - Helpers

    /// An `etag=` override as a valid entity tag: quoted unless already quoted or weak.
    private func quotedETag(_ value: String) -> String {
        if value.hasPrefix("\"") || value.hasPrefix("W/") { return value }
        return "\"\(value)\""
    }

    /// Sends `range` of the pattern with `Content-Length`, throttled if the query asks for it.
    private func sendPattern(
        _ context: ChannelHandlerContext,
        _ request: IncomingRequest,
        _ status: HTTPResponseStatus,
        _ range: Range<Int>,
        headers: HTTPHeaders
    ) {
        let query = request.uri
        let chunkSize = query.int("chunkSize")
        let delay = query.int("chunkDelayMs")
        guard chunkSize != nil || delay != nil else {
            let body = BytePattern.buffer(request.isHead ? 0..<0 : range, allocator: context.channel.allocator)
            var headers = headers
            headers.replaceOrAdd(name: "Content-Length", value: String(range.count))
            return respond(context, request, status, headers: headers, body: body)
        }
        var headers = headers
        headers.replaceOrAdd(name: "Content-Length", value: String(range.count))
        let (head, close) = makeHead(request, status, headers, close: false)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if request.isHead {
            return finish(context, close: close)
        }
        context.flush()
        let stream = BodyStream(
            next: range.lowerBound,
            end: range.upperBound,
            chunkSize: chunkSize.map { min(max($0, 1), maximumResourceSize) } ?? 16_384,
            delayMilliseconds: delay.map { min(max($0, 0), 60_000) } ?? 0,
            close: close
        )
        pump(context, stream)
    }

    /// Writes pieces of the pattern, pausing between them if asked; stops silently once the
    /// client has gone (a cancelled or paused-then-aborted transfer).
    private func pump(_ context: ChannelHandlerContext, _ stream: BodyStream) {
        var stream = stream
        while stream.next < stream.end {
            guard context.channel.isActive else { return }
            let upper = min(stream.next + stream.chunkSize, stream.end)
            let piece = BytePattern.buffer(stream.next..<upper, allocator: context.channel.allocator)
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(piece))), promise: nil)
            stream.next = upper
            if stream.delayMilliseconds > 0, stream.next < stream.end {
                let remaining = stream
                schedule(context, after: stream.delayMilliseconds) { self.pump(context, remaining) }
                return
            }
        }
        finish(context, close: stream.close)
    }
}
