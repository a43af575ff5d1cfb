import CBrotli

/// br (RFC 7932) through libbrotlidec's streaming decoder.
///
/// A brotli stream has no checksum: damage is caught only where it breaks the format, as in a
/// browser. The window is the format's standard one (at most 16 MiB), never the large-window variant.
/// - Threading: network thread only.
final class BrotliStream: CompressedStream {
    private let state: OpaquePointer
    private(set) var finished = false
    private let output = DecodeBuffer()

    /// `nil` if libbrotlidec could not allocate its state.
    init?() {
        guard let state = BrotliDecoderCreateInstance(nil, nil, nil) else { return nil }
        self.state = state
    }

    deinit {
        BrotliDecoderDestroyInstance(state)
    }

    func decode(_ input: UnsafeRawBufferPointer, into sink: (UnsafeRawBufferPointer) -> Bool) -> ContentDecoder.Result {
        // Bytes after the end of the stream are not the body's (as after a gzip stream).
        guard let base = input.baseAddress, !finished else { return .ok }
        var availableIn = input.count
        var nextIn: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
        while true {
            var availableOut = DecodeBuffer.capacity
            var nextOut: UnsafeMutablePointer<UInt8>? = output.base
            let result = BrotliDecoderDecompressStream(state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            guard result != BROTLI_DECODER_RESULT_ERROR else { return .damaged }
            guard output.deliver(DecodeBuffer.capacity - availableOut, to: sink) else { return .refused }
            switch result {
            case BROTLI_DECODER_RESULT_SUCCESS:
                finished = true
                return .ok
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                continue   // the buffer was full: the rest of this input's output is still inside
            default:
                return .ok   // needs more input: all of this piece was used
            }
        }
    }
}
