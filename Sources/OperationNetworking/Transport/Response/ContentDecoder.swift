import Foundation

/// Decodes a compressed response body (gzip, deflate, br or zstd) as it arrives, and knows whether
/// the compressed stream reached its end — which libcurl 7.88's own decoding does not check, so a
/// body cut short on a `Content-Length` that matched the cut passed as a success.
///
/// Every format hands its output on in pieces of at most `DecodeBuffer.capacity` bytes, so
/// a sink that refuses more (`maximumResponseSize`) stops a decompression bomb after one piece.
/// - Threading: network thread only (owned by a `Transfer`).
final class ContentDecoder {
    /// How a call ended.
    enum Result: Equatable {
        /// All input was used; more may follow.
        case ok
        /// The compressed data is damaged.
        case damaged
        /// The sink refused the decoded bytes.
        case refused
    }

    private let stream: any CompressedStream
    /// Whether any compressed byte arrived (an empty body is complete as it is).
    private var sawInput = false

    /// A decoder for a `Content-Encoding` value; `nil` for anything but gzip, x-gzip, deflate, br and zstd.
    init?(contentEncoding: String) {
        let stream: (any CompressedStream)?
        switch contentEncoding.trimmingCharacters(in: .whitespaces).lowercased() {
        case "gzip", "x-gzip": stream = ZlibStream(isDeflate: false)
        case "deflate": stream = ZlibStream(isDeflate: true)
        case "br": stream = BrotliStream()
        case "zstd": stream = ZstdStream()
        default: stream = nil
        }
        guard let stream else { return nil }
        self.stream = stream
    }

    /// Whether the body is complete: the compressed stream ended (or there was none).
    var isComplete: Bool { stream.finished || !sawInput }

    /// Decodes `input`, handing each decoded piece to `sink` (false from the sink stops it).
    func decode(_ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) -> Bool) -> Result {
        guard !input.isEmpty else { return .ok }
        sawInput = true
        return stream.decode(input, into: sink)
    }
}

/// One compression format's streaming decoder, fed the body piece by piece.
/// - Threading: network thread only, like the `ContentDecoder` that owns it.
protocol CompressedStream: AnyObject {
    /// Whether the compressed stream reached its end (for gzip and zstd: the last member or frame so far).
    var finished: Bool { get }
    /// Decodes all of `input` (not empty), handing the output to `sink` in pieces of at most
    /// `DecodeBuffer.capacity` bytes; stops at the first piece the sink refuses.
    func decode(_ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) -> Bool) -> ContentDecoder.Result
}

/// The fixed buffer a `CompressedStream` decodes into, freed with its owner.
/// - Threading: network thread only.
final class DecodeBuffer {
    /// The most one decoding step produces before the sink sees it.
    static let capacity = 64 * 1024
    /// The buffer's memory (`capacity` bytes, uninitialised until a decoder writes it).
    let base = UnsafeMutablePointer<UInt8>.allocate(capacity: DecodeBuffer.capacity)

    deinit {
        base.deallocate()
    }

    /// Hands the first `count` bytes to `sink`: true when there were none or the sink took them.
    func deliver(_ count: Int, to sink: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        count == 0 || sink(UnsafeRawBufferPointer(start: base, count: count))
    }
}
