import Foundation

/// The request body of one hop, read by curl's read callback piece by piece (never copied whole).
///
/// - Threading: network thread only (owned by a `Transfer`).
final class UploadSource {
    private enum Storage {
        case data(Data)
        case stream(InputStream)
    }

    private let storage: Storage
    /// Read position in `data`.
    private var offset = 0
    /// Bytes taken from the stream so far (checked against `length`).
    private var streamed: Int64 = 0
    /// Whether the stream was opened by us (so we close it).
    private var opened = false
    /// Total length when known; `nil` sends the body chunked.
    let length: Int64?
    /// The stream's error after a failed read.
    private(set) var streamError: Error?

    init(data: Data) {
        storage = .data(data)
        length = Int64(data.count)
        packetSize = .max
        delayNanoseconds = 0
    }

    /// Throttling of a multipart body: at most this many bytes per read, and this long between reads.
    private let packetSize: Int
    private let delayNanoseconds: UInt64
    /// No read before this monotonic time (throttled bodies only).
    private(set) var nextReadAt: UInt64 = 0

    init(stream: InputStream, length: Int64?) {
        storage = .stream(stream)
        self.length = length
        if let multipart = stream as? MultipartBodyStream {
            packetSize = multipart.packetSize
            delayNanoseconds = UInt64(max(0, multipart.delay) * 1e9)
        } else {
            packetSize = .max
            delayNanoseconds = 0
        }
    }

    /// What `read` returns when a throttled body must wait until `nextReadAt`.
    static let mustWait = -2

    /// Whether the body can be sent again from the start (for a 307/308 redirect).
    var isReplayable: Bool {
        if case .data = storage { return true }
        return false
    }

    /// Copies up to `capacity` bytes into `buffer`; 0 at the end, -1 on a stream error, `mustWait`
    /// while a throttled body waits for its next packet.
    func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        guard delayNanoseconds > 0 else { return readNow(into: buffer, capacity: capacity) }
        let now = monotonicNow()
        if now < nextReadAt { return UploadSource.mustWait }
        let count = readNow(into: buffer, capacity: min(capacity, packetSize))
        if count > 0 { nextReadAt = now + delayNanoseconds }
        return count
    }

    private func readNow(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        switch storage {
        case .data(let data):
            let count = min(capacity, data.count - offset)
            guard count > 0 else { return 0 }
            let start = data.startIndex + offset
            data.copyBytes(to: buffer, from: start..<(start + count))
            offset += count
            return count
        case .stream(let stream):
            if !opened {
                opened = true
                if stream.streamStatus == .notOpen { stream.open() }
            }
            // A declared length is a promise to the server: never hand curl more than it, and hold the
            // stream to it both ways, or the server waits for bytes that never come (short) or the
            // request silently goes out cut (long).
            let wanted = length.map { Int(clamping: max(0, min(Int64(capacity), $0 - streamed))) } ?? capacity
            guard wanted > 0 else { return 0 }
            let count = stream.read(buffer, maxLength: wanted)
            if count < 0 {
                streamError = stream.streamError
                return -1
            }
            streamed += Int64(count)
            if let length {
                if count == 0 && streamed < length {
                    streamError = UploadSource.lengthMismatch("ended after \(streamed) of the \(length) bytes its Content-Length declares")
                    return -1
                }
                if streamed == length && UploadSource.hasMore(stream) {
                    streamError = UploadSource.lengthMismatch("has more than the \(length) bytes its Content-Length declares")
                    return -1
                }
            }
            return count
        }
    }

    /// Whether a stream that delivered its declared length still has bytes (one is read to find out:
    /// the transfer fails anyway when there is one).
    private static func hasMore(_ stream: InputStream) -> Bool {
        var probe: UInt8 = 0
        return stream.read(&probe, maxLength: 1) > 0
    }

    /// The error a body stream that breaks its declared length fails the transfer with.
    private static func lengthMismatch(_ detail: String) -> Error {
        NSError(domain: NSURLErrorDomain, code: URLError.requestBodyStreamExhausted.rawValue,
                userInfo: [NSLocalizedDescriptionKey: "The request body stream \(detail)."])
    }

    /// Whether not one byte was taken from the body yet (a stream still unopened by this source).
    var isUnread: Bool { offset == 0 && !opened }

    /// Starts over from the first byte; false when the body cannot be replayed.
    func rewind() -> Bool {
        guard isReplayable else { return offset == 0 && !opened }
        offset = 0
        return true
    }

    /// Closes a stream this source opened.
    func close() {
        if case .stream(let stream) = storage, opened {
            stream.close()
        }
    }
}
