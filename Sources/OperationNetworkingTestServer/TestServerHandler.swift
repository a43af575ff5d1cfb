import Foundation
import NIOCore
import NIOHTTP1

/// A request whose `.end` has arrived, with everything the routes need to answer it.
struct IncomingRequest {
    /// The decoded request line and headers.
    let head: HTTPRequestHead
    /// The request target split into path and query.
    let uri: ParsedURI
    /// The logged form (headers, body, connection ID).
    let record: RecordedRequest

    /// HEAD responses advertise the body's framing but must not carry it.
    var isHead: Bool { head.method == .HEAD }
}

/// Per-connection handler: accumulates each request, logs it, then routes it.
///
/// `HTTPServerPipelineHandler` (from `configureHTTPServerPipeline`) holds back the next
/// request until the current response's `.end` was written, so this handler only ever deals with
/// one request at a time, even when it answers late (delays, throttled bodies).
final class TestServerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Larger bodies are refused with 413 rather than buffered without bound.
    static let maxBodyBytes = 256 * 1024 * 1024

    /// Which accepted connection this handler serves (1-based).
    let connectionID: Int
    /// Shared log and counters.
    let state: ServerState

    private var requestHead: HTTPRequestHead?
    private var body = ByteBuffer()
    private var bodyTooLarge = false
    /// The single scheduled step (a delay or the next throttled chunk) still to run; cancelled
    /// when the channel goes away so nothing touches a dead pipeline.
    private var pendingTask: Scheduled<Void>?
    /// `/sink` requests: the body is counted and dropped instead of kept (large-upload tests).
    private var discardsBody = false
    /// Bytes of the current `/sink` body.
    var discardedBytes = 0

    init(connectionID: Int, state: ServerState) {
        self.connectionID = connectionID
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
            answerExpectContinue(context, head)
            body = context.channel.allocator.buffer(capacity: 0)
            bodyTooLarge = false
            discardsBody = ParsedURI(head.uri).path == "/sink"
            discardedBytes = 0
        case .body(var part):
            if discardsBody {
                discardedBytes += part.readableBytes
                return
            }
            guard !bodyTooLarge else { return }
            if body.readableBytes + part.readableBytes > Self.maxBodyBytes {
                // Keep reading (and discarding) so the 413 can still be sent after `.end`.
                bodyTooLarge = true
                body = context.channel.allocator.buffer(capacity: 0)
            } else if body.readableBytes == 0 {
                body = part  // no copy for the common single-part body
            } else {
                body.writeBuffer(&part)
            }
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            let received = body
            body = ByteBuffer()
            handle(context: context, head: head, body: received)
        }
    }

    /// Answers `Expect: 100-continue` at once: libcurl sends it with larger uploads and then waits up to
    /// a second for the interim response.
    private func answerExpectContinue(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        guard head.version.major == 1, head.version.minor >= 1,
              head.headers[canonicalForm: "expect"].contains(where: { $0.lowercased() == "100-continue" }) else { return }
        let interim = HTTPResponseHead(version: head.version, status: .continue)
        context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelPendingTask()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelPendingTask()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Protocol errors already got their 400 from HTTPServerProtocolErrorHandler; I/O errors
        // mean the peer is gone. Either way the connection is of no further use.
        context.close(promise: nil)
    }

    /// Logs the complete request, then answers it.
    private func handle(context: ChannelHandlerContext, head: HTTPRequestHead, body: ByteBuffer) {
        let uri = ParsedURI(head.uri)
        let record = RecordedRequest(
            method: head.method.rawValue,
            uri: head.uri,
            path: uri.path,
            query: uri.query,
            headers: head.headers.map { (name: $0.name, value: $0.value) },
            body: body.withUnsafeReadableBytes { Data($0) },
            connectionID: connectionID
        )
        // Logged before responding, so a test that has seen the response always sees the request.
        state.record(record)
        let request = IncomingRequest(head: head, uri: uri, record: record)
        if bodyTooLarge {
            respondText(context, request, .payloadTooLarge, "request body over 256 MiB\n", close: true)
            return
        }
        route(context: context, request: request)
    }

    // MARK: - Response helpers

    /// Builds a response head, deciding whether the connection closes after this response.
    func makeHead(
        _ request: IncomingRequest,
        _ status: HTTPResponseStatus,
        _ headers: HTTPHeaders,
        close: Bool
    ) -> (head: HTTPResponseHead, close: Bool) {
        var headers = headers
        let closing = close || !request.head.isKeepAlive
        if closing {
            headers.replaceOrAdd(name: "Connection", value: "close")
        } else if request.head.version.minor == 0 {
            // HTTP/1.0 is only persistent when the response says so explicitly.
            headers.replaceOrAdd(name: "Connection", value: "keep-alive")
        }
        return (HTTPResponseHead(version: request.head.version, status: status, headers: headers), closing)
    }

    /// Sends a complete response with a `Content-Length`-framed body (omitted for HEAD/204/304).
    func respond(
        _ context: ChannelHandlerContext,
        _ request: IncomingRequest,
        _ status: HTTPResponseStatus,
        headers: HTTPHeaders = [:],
        body: ByteBuffer? = nil,
        close: Bool = false
    ) {
        var headers = headers
        let body = body ?? context.channel.allocator.buffer(capacity: 0)
        if status.mayHaveResponseBody, !headers.contains(name: "content-length") {
            headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
        }
        let (head, closing) = makeHead(request, status, headers, close: close)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        // NIO's encoder rejects body parts for HEAD, so only the framing headers go out.
        if status.mayHaveResponseBody, !request.isHead, body.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        finish(context, close: closing)
    }

    /// Sends a complete text response.
    func respondText(
        _ context: ChannelHandlerContext,
        _ request: IncomingRequest,
        _ status: HTTPResponseStatus,
        _ text: String,
        contentType: String = "text/plain; charset=utf-8",
        headers: HTTPHeaders = [:],
        close: Bool = false
    ) {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: contentType)
        let buffer = context.channel.allocator.buffer(string: text)
        respond(context, request, status, headers: headers, body: buffer, close: close)
    }

    /// Sends a complete `application/json` response encoding `value`.
    func respondJSON<Value: Encodable>(
        _ context: ChannelHandlerContext,
        _ request: IncomingRequest,
        _ value: Value
    ) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(value)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            let buffer = context.channel.allocator.buffer(bytes: data)
            respond(context, request, .ok, headers: headers, body: buffer)
        } catch {
            respondText(context, request, .internalServerError, "JSON encoding failed: \(error)\n")
        }
    }

    /// Writes `.end`, flushes, and closes the connection afterwards if asked to.
    func finish(_ context: ChannelHandlerContext, close: Bool) {
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// Runs `work` on the event loop after `milliseconds`, unless the channel closes first.
    /// Scheduling (never sleeping) keeps the single event-loop thread free for other connections.
    func schedule(_ context: ChannelHandlerContext, after milliseconds: Int, _ work: @escaping () -> Void) {
        pendingTask = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(milliseconds))) {
            self.pendingTask = nil
            guard context.channel.isActive else { return }
            work()
        }
    }

    private func cancelPendingTask() {
        pendingTask?.cancel()
        pendingTask = nil
    }
}
