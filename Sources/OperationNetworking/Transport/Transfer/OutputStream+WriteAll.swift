import Foundation

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
