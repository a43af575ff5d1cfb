import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: what the C callbacks forward to

extension Transfer {
    /// When curl's callbacks stamp activity: the network thread's clock of the loop turn.
    private var activityTime: UInt64 { network?.clock ?? monotonicNow() }

    /// When the hop last saw activity (a header line, a piece of either body), as the stall scan reads it.
    var latestActivity: UInt64 { hop.lastActivity }

    /// One response header line arrived (every line counts as activity); false aborts the transfer
    /// (the reason is in `abortError`).
    func receiveHeaderLine(_ line: UnsafeRawBufferPointer) -> Bool {
        assertOnItsThread()
        switch hop.receiveHeaderLine(line, at: activityTime) {
        case .tooLarge:
            current.abortError = TransportError.make(.cannotParseResponse,
                                             "The response headers exceed \(hop.headerParser.limit) bytes.",
                                             url: currentRequest.url)
            return false
        case .headComplete:
            return responseHeadCompleted()
        case .none, .informational:
            return true
        }
    }

    /// A piece of the response body arrived; false aborts the transfer.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        assertOnItsThread()
        hop.lastActivity = activityTime
        guard let decoder = hop.decoder else { return receiveDecoded(bytes) }
        switch decoder.decode(bytes, into: { receiveDecoded($0) }) {
        case .ok, .refused:
            return current.abortError == nil
        case .damaged:
            current.abortError = TransportError.make(.cannotDecodeContentData, "The compressed response body is damaged.",
                                             url: currentRequest.url)
            return false
        }
    }

    /// Body bytes as the caller gets them (inflated when compressed): set aside, skipped or delivered.
    private func receiveDecoded(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if hop.kind.setsBodyAside {
            // A 3xx or 401 body may become the response: it is held to the same limit.
            if let limit = settings.maximumBodySize, Int64(hop.setAsideBody.count + bytes.count) > limit {
                current.abortError = tooLarge(limit)
                return false
            }
            hop.setAsideBody.append(contentsOf: bytes)
            return true
        }
        var bytes = bytes
        if current.bytesToSkip > 0 {
            let skipped = min(Int64(bytes.count), current.bytesToSkip)
            current.bytesToSkip -= skipped
            bytes = UnsafeRawBufferPointer(rebasing: bytes[Int(skipped)...])
            if bytes.isEmpty { return true }
        }
        return deliver(bytes)
    }

    /// Copies request body bytes for curl; the count, 0 at the end, -1 to abort, or `mustWait` to pause.
    func sendBody(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        assertOnItsThread()
        guard let upload = hop.upload else { return 0 }
        restartBodyIfRequestWasSentAgain()
        let count = upload.read(into: buffer, capacity: capacity)
        if count == UploadSource.mustWait {
            // Throttled: curl pauses the upload; the network thread resumes it when the delay is over.
            hop.lastActivity = upload.nextReadAt
            network?.resumeUpload(self, at: upload.nextReadAt)
            return UploadSource.mustWait
        }
        if count < 0 {
            let reason = (upload.streamError as NSError?)?.localizedDescription ?? "The request body stream failed."
            current.abortError = TransportError.make(.requestBodyStreamExhausted, reason, url: currentRequest.url,
                                             underlying: upload.streamError)
            return -1
        }
        if count > 0 {
            hop.lastActivity = activityTime
            hop.bytesSent = hop.bytesSent.saturatingAdd(Int64(count))
            delegate?.transfer(self, didSendBytes: count, totalBytes: hop.bytesSent, expectedBytes: upload.length ?? -1)
        }
        return count
    }

    /// Starts the request body over; false when it cannot be replayed.
    func rewindBody() -> Bool {
        assertOnItsThread()
        guard let upload = hop.upload, upload.rewind() else { return false }
        hop.bytesSent = 0
        return true
    }

    /// libcurl sends a request again on its own (a refused HTTP/2 stream, a reused connection that
    /// died), but asks for the body to be rewound only when some of it went out: a body it had read and
    /// not yet sent would be skipped, and the request go out with an empty or cut body. Its count of
    /// request-head bytes grows with each sending, so a body read that finds it grown starts over.
    private func restartBodyIfRequestWasSentAgain() {
        guard let easy else { return }
        let headBytes = easy.info(long: CURLINFO_REQUEST_SIZE)
        guard headBytes != hop.requestHeadBytesAtBody else { return }
        if hop.bytesSent > 0 { _ = rewindBody() }
        hop.requestHeadBytesAtBody = headBytes
    }

    // MARK: - Private

    /// Hands body bytes to the sink: memory or the caller's output stream.
    private func deliver(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if let limit = settings.maximumBodySize, bytesReceived.saturatingAdd(Int64(bytes.count)) > limit {
            current.abortError = tooLarge(limit)
            return false
        }
        if let outputStream {
            guard write(bytes, to: outputStream) else { return false }
        } else {
            current.body.append(contentsOf: bytes)
        }
        current.bytesReceived = current.bytesReceived.saturatingAdd(Int64(bytes.count))
        delegate?.transfer(self, didReceiveBytes: bytes.count, totalBytes: current.bytesReceived,
                           expectedBytes: current.expectedBodyLength)
        return true
    }

    /// Writes all of `bytes` or records why not (a stream that fails or takes nothing fails the operation).
    func write(_ bytes: UnsafeRawBufferPointer, to stream: OutputStream) -> Bool {
        guard stream.writeAll(bytes) else {
            current.abortError = stream.reportedError ?? TransportError.make(
                .cannotWriteToFile, "The output stream did not accept the response body.", url: currentRequest.url)
            return false
        }
        return true
    }

    /// A final response head is complete: store it, decide about redirects and resumption.
    private func responseHeadCompleted() -> Bool {
        guard let url = hop.url, hop.headerParser.statusCode > 0 else {
            current.abortError = TransportError.make(.badServerResponse, "The response head could not be read.",
                                             url: currentRequest.url)
            return false
        }
        let head = hop.headerParser.head(url: url)
        if isTunnelAnswer() {
            receiveTunnelAnswer(head)   // the proxy's, not the response: neither kept nor reported
            return true
        }
        current.head = head
        hop.decoder = hop.asksForEncodings ? head.contentEncoding.flatMap { ContentDecoder(contentEncoding: $0) } : nil
        if head.hasConflictingContentLengths {
            // Two lengths for one body: no way to tell where it ends (RFC 9112 §6.3).
            current.abortError = TransportError.make(.cannotParseResponse, "The response has conflicting Content-Length headers.",
                                             url: url)
            return false
        }
        if hop.handlesCookies && head.hasSetCookie {
            storeCookies(from: head.setCookieValues, url: hop.wireURL ?? url)
        }
        let status = head.statusCode
        let isRedirect = (300..<400).contains(status) && status != 304 && hop.headerParser.hasField("Location")
        if status == 304, let dropped = delegate?.transfer(self, resendsUnconditionallyAfter: head) {
            hop.droppedOnResend = dropped
            hop.classify(as: .unusableNotModified)
        } else {
            hop.classify(as: isRedirect ? .redirect : isAnswerableChallenge(head) ? .challenge
                : isRetryableStatus(status) ? .retryable : .delivering)
        }
        hop.setAsideBody.removeAll()
        // A retryable status is a response the monitors hear of, even if another attempt replaces it.
        if hop.kind == .retryable { delegate?.transfer(self, didReceive: head) }
        if hop.kind.setsBodyAside { return true }
        if let limit = settings.maximumBodySize, head.contentEncoding == nil,
           let declared = head.declaredContentLength, declared > limit,
           currentRequest.uppercasedMethod != "HEAD" {
            current.abortError = tooLarge(limit)   // known from the head: not one byte needs to arrive
            return false
        }
        // Asked here, in curl's header callback, because the body's first byte follows as soon as it returns.
        switch delegate?.transfer(self, willDeliver: head) ?? .allow {
        case .fail(let error):
            refuseResponse(with: error)
            return false
        case .restartOutput:
            restartOutput(for: head)
        case .allow:
            guard prepareSinkForResponse(status: status, head: head) else { return false }
        }
        let length = head.expectedContentLength
        if outputStream == nil, length > 0, length < 64 << 20 {
            current.body.reserveCapacity(current.body.count + Int(length))
        }
        return true
    }

    /// The operation refused the response: the transfer fails with its error, as it is (no retry).
    func refuseResponse(with error: Error) {
        assertOnItsThread()
        current.abortError = error
        current.abortIsFinal = true
    }

    /// The operation started its output over (a file it truncated, say): the body is written whole from
    /// its first byte, whatever the sink held before, and counted from zero; nothing is skipped or
    /// checked against a paused download's kept bytes.
    private func restartOutput(for head: ResponseHead) {
        current.body.removeAll(keepingCapacity: true)
        current.bytesReceived = 0
        current.bytesToSkip = 0
        current.expectedBodyLength = head.expectedContentLength
        // A pause continues from the resource's offset: a 206's first byte is where its body starts.
        current.rangeBase = head.statusCode == 206 ? (ContentRange(head.value(for: "Content-Range"))?.first ?? 0) : 0
    }

    /// Keeps or discards what a paused download already had: a 206 continues it, a 200 restarts the body.
    private func prepareSinkForResponse(status: Int, head: ResponseHead) -> Bool {
        let length = head.expectedContentLength
        guard let resume = resumeFrom, resume.offset > 0 else {
            current.expectedBodyLength = length
            if status == 206, case .bytes(let start, _) = hop.callerRange {
                // The body starts where the caller's range does (Content-Range says so exactly).
                current.rangeBase = ContentRange(head.value(for: "Content-Range"))?.first ?? start
            }
            return true
        }
        if hop.sentRange && status == 206 {
            return continuationFits(head, resume: resume)
        }
        current.expectedBodyLength = length
        if outputStream == nil {
            // The server sent the whole body again: start over instead of duplicating the prefix.
            current.body.removeAll(keepingCapacity: true)
            current.bytesReceived = 0
            return true
        }
        guard (200..<300).contains(status) else { return true }
        // A caller's stream cannot be rewound: drop the prefix it already holds, but only when the
        // resource is provably the same one; otherwise the file would mix two versions.
        let validator = hop.headerParser.value(for: "ETag") ?? hop.headerParser.value(for: "Last-Modified")
        guard resume.validator == nil || validator == nil || validator == resume.validator else {
            current.abortError = TransportError.make(
                .cannotWriteToFile,
                "The resource changed on the server while paused; the output stream cannot be rewound.",
                url: currentRequest.url)
            return false
        }
        current.bytesToSkip = resume.offset
        return true
    }

    /// A 206 continues the kept bytes only when it starts exactly where they end and describes the
    /// same resource; anything else fails the transfer rather than splice wrong bytes into the body.
    /// Sets where the body must end, so a 206 that stops short of the resource's end fails too.
    private func continuationFits(_ head: ResponseHead, resume: ResumePoint) -> Bool {
        let value = head.value(for: "Content-Range")
        guard let range = ContentRange(value), range.first == resume.offset else {
            current.abortError = TransportError.make(
                .badServerResponse,
                "The server answered the continuation from byte \(resume.offset) with Content-Range "
                + "\"\(value ?? "")\"; the kept bytes were not extended.", url: currentRequest.url)
            return false
        }
        if let known = resume.totalLength, let total = range.total, known != total {
            current.abortError = TransportError.make(
                .badServerResponse,
                "The resource is \(total) bytes long now, \(known) when the download was paused; the kept bytes "
                + "belong to another version.", url: currentRequest.url)
            return false
        }
        let length = head.expectedContentLength
        current.expectedBodyLength = length >= 0 ? resume.offset.saturatingAdd(length) : range.last.saturatingAdd(1)
        // An open range must reach the resource's end; a closed one (the caller's) its own end.
        hop.requiredBodyEnd = resume.rangeEnd.map { $0.saturatingAdd(1) } ?? (range.total ?? resume.totalLength)
        return true
    }

    /// The error for a body past `maximumBodySize`.
    private func tooLarge(_ limit: Int64) -> URLError {
        TransportError.make(.dataLengthExceedsMaximum, "The response body exceeds the maximum of \(limit) bytes.",
                            url: currentRequest.url)
    }

    /// Stores what the response's `Set-Cookie` fields may set for `url` (`CookieAcceptance`'s rules).
    private func storeCookies(from values: [String], url: URL) {
        guard !values.isEmpty else { return }
        CookieAcceptance.store(values, from: url, in: Transfer.cookieStorage)
    }
}

extension OutputStream {
    /// Writes all of `bytes`, calling `write` again after each short write: true once every byte is
    /// written, false when the stream fails (-1) or takes nothing (0, as a full fixed-size buffer
    /// does), which would otherwise loop for ever. The one way the library writes to a caller's stream.
    func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return true }
        var written = 0
        while written < bytes.count {
            let result = write(base + written, maxLength: bytes.count - written)
            guard result > 0 else { return false }
            written += result
        }
        return true
    }
}

extension Stream {
    /// `streamError`, asked only of a stream whose status says it failed: corelibs' own
    /// `streamError` traps when CoreFoundation has no error to give (a stream that merely took
    /// nothing, or a subclass that does not override it), and a caller's stream must not crash the
    /// network thread.
    var reportedError: Error? {
        streamStatus == .error ? streamError : nil
    }
}
