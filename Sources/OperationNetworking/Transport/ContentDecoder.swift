import CZlib
import Foundation

/// Inflates a gzip or deflate response body as it arrives, and knows whether the compressed stream
/// reached its end — which libcurl 7.88's own decoding does not check, so a body cut short on a
/// `Content-Length` that matched the cut passed as a success.
///
/// `deflate` is accepted both as zlib data (RFC 9110) and raw deflate (what some servers send).
/// Concatenated gzip members are decoded one after another.
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

    private var stream = z_stream()
    private var initialised = false
    private let isDeflate: Bool
    /// Whether the deflate data turned out to be raw (no zlib header) and the stream was restarted so.
    private var triedRaw = false
    /// Whether the current compressed stream reached its end.
    private(set) var finished = false
    /// Whether any compressed byte arrived (an empty body is complete as it is).
    private var sawInput = false
    private var output = [UInt8](repeating: 0, count: 64 * 1024)

    /// A decoder for a `Content-Encoding` value; `nil` for anything but gzip, x-gzip and deflate.
    init?(contentEncoding: String) {
        switch contentEncoding.trimmingCharacters(in: .whitespaces).lowercased() {
        case "gzip", "x-gzip": isDeflate = false
        case "deflate": isDeflate = true
        default: return nil
        }
        guard start(windowBits: isDeflate ? 15 : 15 + 16) else { return nil }
    }

    deinit {
        if initialised { inflateEnd(&stream) }
    }

    /// Whether the body is complete: the compressed stream ended (or there was none).
    var isComplete: Bool { finished || !sawInput }

    /// Inflates `input`, handing each decoded piece to `sink` (false from the sink stops it).
    func decode(_ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) -> Bool) -> Result {
        guard let base = input.baseAddress, !input.isEmpty else { return .ok }
        sawInput = true
        var remaining = input.count
        var next = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        while remaining > 0 {
            if finished {
                // Another gzip member may follow; anything else after the end is not the body's.
                guard !isDeflate, next.pointee == 0x1F, inflateReset(&stream) == Z_OK else { return .ok }
                finished = false
            }
            stream.next_in = next
            stream.avail_in = UInt32(clamping: remaining)
            let status: Int32 = output.withUnsafeMutableBufferPointer { buffer in
                stream.next_out = buffer.baseAddress
                stream.avail_out = UInt32(buffer.count)
                return inflate(&stream, Z_NO_FLUSH)
            }
            let produced = output.count - Int(stream.avail_out)
            let used = remaining - Int(stream.avail_in)
            if status == Z_DATA_ERROR && isDeflate && !triedRaw && produced == 0 {
                // No zlib header: the server sent raw deflate. Start over without one.
                triedRaw = true
                inflateEnd(&stream)
                initialised = false
                guard start(windowBits: -15) else { return .damaged }
                continue
            }
            guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else { return .damaged }
            if produced > 0 {
                let accepted = output.withUnsafeBytes { sink(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) }
                guard accepted else { return .refused }
            }
            if status == Z_STREAM_END { finished = true }
            next += used
            remaining -= used
            if used == 0 && produced == 0 && !finished { return status == Z_BUF_ERROR ? .ok : .damaged }
        }
        return .ok
    }

    private func start(windowBits: Int32) -> Bool {
        stream = z_stream()
        initialised = inflateInit2_(&stream, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
        return initialised
    }
}
