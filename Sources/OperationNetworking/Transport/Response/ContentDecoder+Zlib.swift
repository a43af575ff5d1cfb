import CZlib

/// gzip and deflate through zlib's `inflate`.
///
/// `deflate` is accepted both as zlib data (RFC 9110) and raw deflate (what some servers send).
/// Concatenated gzip members are decoded one after another.
/// - Threading: network thread only.
final class ZlibStream: CompressedStream {
    private var stream = z_stream()
    private var initialised = false
    private let isDeflate: Bool
    /// Whether the deflate data turned out to be raw (no zlib header) and the stream was restarted so.
    private var triedRaw = false
    private(set) var finished = false
    private let output = DecodeBuffer()

    /// A gzip decoder, or a deflate one; `nil` if zlib could not set up its state.
    init?(isDeflate: Bool) {
        self.isDeflate = isDeflate
        guard start(windowBits: isDeflate ? 15 : 15 + 16) else { return nil }
    }

    deinit {
        if initialised { inflateEnd(&stream) }
    }

    func decode(_ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) -> Bool) -> ContentDecoder.Result {
        guard let base = input.baseAddress else { return .ok }
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
            stream.next_out = output.base
            stream.avail_out = UInt32(DecodeBuffer.capacity)
            let status = inflate(&stream, Z_NO_FLUSH)
            let produced = DecodeBuffer.capacity - Int(stream.avail_out)
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
            guard output.deliver(produced, to: sink) else { return .refused }
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
