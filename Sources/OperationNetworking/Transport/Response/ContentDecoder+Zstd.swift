import CZstd

/// zstd (RFC 8878) through libzstd's streaming decoder; concatenated and skippable frames are decoded
/// one after another, and each frame's checksum, when it has one, is checked.
///
/// Frames that need a window above 8 MiB are refused as damaged: RFC 9659 has zstd content-encoders
/// stay within 8 MiB, and a larger window is memory a response could make the client allocate.
/// - Threading: network thread only.
final class ZstdStream: CompressedStream {
    /// log2 of the largest window accepted (8 MiB, RFC 9659 §3).
    static let maximumWindowLog: Int32 = 23

    private let context: OpaquePointer
    private(set) var finished = false
    private let output = DecodeBuffer()

    /// `nil` if libzstd could not allocate its context.
    init?() {
        guard let context = ZSTD_createDCtx() else { return nil }
        self.context = context
        let limited = ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, ZstdStream.maximumWindowLog)
        guard ZSTD_isError(limited) == 0 else {
            ZSTD_freeDCtx(context)
            return nil
        }
    }

    deinit {
        ZSTD_freeDCtx(context)
    }

    func decode(_ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) -> Bool) -> ContentDecoder.Result {
        var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
        while true {
            var target = ZSTD_outBuffer(dst: output.base, size: DecodeBuffer.capacity, pos: 0)
            let consumedBefore = source.pos
            // 0: a frame ended and all of its output is in `target`; else more of the frame is to come.
            let hint = ZSTD_decompressStream(context, &target, &source)
            guard ZSTD_isError(hint) == 0 else { return .damaged }
            guard output.deliver(target.pos, to: sink) else { return .refused }
            finished = hint == 0
            let outputFull = target.pos == target.size
            if source.pos == source.size && !outputFull { return .ok }
            // libzstd always moves when it has room to write; standing still would loop for ever.
            if source.pos == consumedBefore && target.pos == 0 { return finished ? .ok : .damaged }
        }
    }
}
