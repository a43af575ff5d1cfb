import CZlib
import Foundation

/// Decodes a gzip or deflate response body piece by piece. `onet request` offers httpie's
/// `Accept-Encoding: gzip, deflate` itself, and the library hands over the bytes of a request that set
/// its own `Accept-Encoding` as they came, so the tool inflates them (through zlib, as httpie does).
/// - Threading: one body, one thread at a time.
final class BodyDecoder {
    /// A body that is not the encoding its `Content-Encoding` names.
    struct Damaged: Error, CustomStringConvertible {
        var description: String { "the response body is not valid gzip/deflate data" }
    }

    private var stream = z_stream()
    private var initialised = false
    private let isDeflate: Bool
    private var triedRaw = false
    private var finished = false
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    /// A decoder for `contentEncoding` (`gzip`, `x-gzip` or `deflate`), or `nil` for any other
    /// (identity, or one httpie did not offer: those bytes pass as they are, as httpie passes them).
    init?(contentEncoding: String?) {
        switch contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "gzip", "x-gzip": isDeflate = false
        case "deflate": isDeflate = true
        default: return nil
        }
        guard start(windowBits: isDeflate ? 15 : 15 + 16) else { return nil }
    }

    deinit {
        if initialised { inflateEnd(&stream) }
    }

    private func start(windowBits: Int32) -> Bool {
        stream = z_stream()
        initialised = inflateInit2_(&stream, windowBits, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
        return initialised
    }

    /// The decoded bytes of the next piece of the body.
    func decode(_ piece: Data) throws -> Data {
        var output = Data()
        var input = [UInt8](piece)
        var offset = 0
        while offset < input.count {
            if finished {
                // Another gzip member may follow; anything else after the end is not the body's.
                guard !isDeflate, input[offset] == 0x1F, inflateReset(&stream) == Z_OK else { return output }
                finished = false
            }
            let (status, used, produced) = input.withUnsafeMutableBufferPointer { source in
                buffer.withUnsafeMutableBufferPointer { target in
                    stream.next_in = source.baseAddress.map { $0 + offset }
                    stream.avail_in = UInt32(clamping: source.count - offset)
                    stream.next_out = target.baseAddress
                    stream.avail_out = UInt32(target.count)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, source.count - offset - Int(stream.avail_in), target.count - Int(stream.avail_out))
                }
            }
            if status == Z_DATA_ERROR && isDeflate && !triedRaw && produced == 0 {
                triedRaw = true   // deflate without the zlib header: what some servers send
                inflateEnd(&stream)
                guard start(windowBits: -15) else { throw Damaged() }
                continue
            }
            guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else { throw Damaged() }
            output.append(contentsOf: buffer[..<produced])
            if status == Z_STREAM_END { finished = true }
            offset += used
            if used == 0 && produced == 0 && !finished { break }
        }
        input.removeAll()
        return output
    }

    /// Throws when the body ended before its compressed stream did.
    func finish() throws {
        guard finished else { throw Damaged() }
    }

    /// `body` decoded whole, or as it is when `contentEncoding` is not gzip or deflate.
    static func decoded(_ body: Data, contentEncoding: String?) throws -> Data {
        guard !body.isEmpty, let decoder = BodyDecoder(contentEncoding: contentEncoding) else { return body }
        let result = try decoder.decode(body)
        try decoder.finish()
        return result
    }
}

/// httpie's `--compress`: the body as zlib-wrapped deflate (level 6, as Python's `zlib.compressobj()`).
enum BodyCompression {
    /// The compressed bytes, or `nil` when zlib fails.
    static func deflated(_ body: Data) -> Data? {
        var length = compressBound(uLong(body.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = body.withUnsafeBytes { source in
            compress2(&output, &length, source.bindMemory(to: Bytef.self).baseAddress, uLong(body.count), Z_DEFAULT_COMPRESSION)
        }
        guard status == Z_OK else { return nil }
        return Data(output[..<Int(length)])
    }
}
