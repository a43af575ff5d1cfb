import Foundation

/// The multipart body as an `InputStream`, produced part by part as it is read.
///
/// Boundaries and headers are small `Data`; file parts are read from disk through a `FileHandle` in
/// the reader's chunk size; stream parts are read from their stream. A part that delivers fewer bytes
/// than it declared (a file that shrank, a short stream) fails the read with an error, so the upload
/// fails instead of sending a body shorter than its `Content-Length`. The stream is read on the
/// network thread by curl's read callback: nothing here hops to another queue.
/// - Threading: read by one thread at a time (the transfer's); not shared.
final class MultipartBodyStream: InputStream {
    /// One run of bytes in the body.
    private enum Segment {
        case bytes(Data)
        case file(URL, Int64)
        case stream(InputStream?, Int64)
    }

    private let segments: [Segment]
    /// The exact byte count of the whole body.
    let contentLength: Int64
    /// Bytes per read at most, and the pause between reads (`throttleBandwidth`).
    let packetSize: Int
    let delay: TimeInterval

    private var index = 0
    private var offsetInSegment: Int64 = 0
    private var fileHandle: FileHandle?
    private var status: Stream.Status = .notOpen
    private var failure: Error?

    convenience init(builder: MultipartFormDataBuilder) {
        var segments: [Segment] = []
        var total: Int64 = 0
        let boundary = builder.boundary
        for (position, part) in builder.parts.enumerated() {
            var head = (position == 0 ? "" : "\r\n") + "--\(boundary)\r\n"
            for (name, value) in part.headers { head += "\(name): \(value)\r\n" }
            head += "\r\n"
            let headData = Data(head.utf8)
            segments.append(.bytes(headData))
            total += Int64(headData.count)
            switch part.body {
            case .data(let data): segments.append(.bytes(data))
            case .file(let url): segments.append(.file(url, part.length))
            case .stream(let stream): segments.append(.stream(stream, part.length))
            }
            total += part.length
        }
        let tail = Data("\r\n--\(boundary)--\r\n".utf8)
        segments.append(.bytes(tail))
        total += Int64(tail.count)
        self.init(segments: segments, contentLength: total, packetSize: builder.packetSize, delay: builder.delay)
    }

    private init(segments: [Segment], contentLength: Int64, packetSize: Int, delay: TimeInterval) {
        self.segments = segments
        self.contentLength = contentLength
        self.packetSize = packetSize
        self.delay = delay
        super.init(data: Data())
    }

    /// Whether the body can be produced again from the start: true unless a part is a caller's stream
    /// (data and files are simply read again).
    var canBeRebuilt: Bool {
        !segments.contains { if case .stream = $0 { return true } else { return false } }
    }

    /// A new, unread stream of the same body (for a retry); `nil` when a part is a caller's stream.
    func rebuilt() -> MultipartBodyStream? {
        guard canBeRebuilt else { return nil }
        return MultipartBodyStream(segments: segments, contentLength: contentLength, packetSize: packetSize, delay: delay)
    }

    override var streamStatus: Stream.Status { status }
    override var streamError: Error? { failure }
    override var hasBytesAvailable: Bool { status == .open }

    override func open() {
        guard status == .notOpen else { return }
        status = .open
    }

    override func close() {
        try? fileHandle?.close()
        fileHandle = nil
        if case .stream(let stream?, _) = currentSegment { stream.close() }
        status = .closed
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    /// Fills `buffer` with the next bytes; 0 at the end, -1 after a failure (see `streamError`).
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength len: Int) -> Int {
        if status == .notOpen { open() }
        guard status == .open, failure == nil else { return failure == nil ? 0 : -1 }
        let wanted = min(len, packetSize)
        var produced = 0
        while produced < wanted, index < segments.count {
            let count = readSegment(into: buffer + produced, capacity: wanted - produced)
            if count < 0 {
                status = .error
                return produced > 0 ? produced : -1
            }
            if count == 0 {
                advance()
            } else {
                produced += count
            }
        }
        if index >= segments.count && produced == 0 { status = .atEnd }
        return produced
    }

    private var currentSegment: Segment? { index < segments.count ? segments[index] : nil }

    private func advance() {
        try? fileHandle?.close()
        fileHandle = nil
        if case .stream(let stream?, _) = currentSegment { stream.close() }
        index += 1
        offsetInSegment = 0
    }

    /// Copies from the current segment; 0 when it is exhausted, -1 on failure.
    private func readSegment(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        switch segments[index] {
        case .bytes(let data):
            let remaining = Int64(data.count) - offsetInSegment
            let count = Int(min(Int64(capacity), remaining))
            guard count > 0 else { return 0 }
            let start = data.startIndex + Int(offsetInSegment)
            data.copyBytes(to: buffer, from: start..<(start + count))
            offsetInSegment += Int64(count)
            return count
        case .file(let url, let length):
            let remaining = length - offsetInSegment
            guard remaining > 0 else { return 0 }
            do {
                if fileHandle == nil { fileHandle = try FileHandle(forReadingFrom: url) }
                let chunk = try fileHandle?.read(upToCount: Int(min(Int64(capacity), remaining))) ?? Data()
                guard !chunk.isEmpty else { return fail("The file \(url.path) ended before its declared length.") }
                chunk.copyBytes(to: buffer, count: chunk.count)
                offsetInSegment += Int64(chunk.count)
                return chunk.count
            } catch {
                failure = error
                return -1
            }
        case .stream(let stream, let length):
            let remaining = length - offsetInSegment
            guard remaining > 0 else { return 0 }
            guard let stream else { return fail("A stream part has no stream but declares \(length) bytes.") }
            if stream.streamStatus == .notOpen { stream.open() }
            let count = stream.read(buffer, maxLength: Int(min(Int64(capacity), remaining)))
            if count < 0 {
                failure = stream.streamError ?? MultipartBodyStream.error("A part's stream failed.")
                return -1
            }
            guard count > 0 else { return fail("A stream part ended before its declared length.") }
            offsetInSegment += Int64(count)
            return count
        }
    }

    private func fail(_ message: String) -> Int {
        failure = MultipartBodyStream.error(message)
        return -1
    }

    private static func error(_ message: String) -> NSError {
        LibraryError.requestSerialization(.bodyStreamExhausted, message)
    }
}
