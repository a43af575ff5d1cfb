import CBrotliEncoder
import CZlib
import CZstd
import Foundation
import NIOCore
import NIOHTTP1

/// Bodies are compressed in memory, so keep a mistyped size from exhausting it.
private let maximumEncodedSize = 1 << 28

/// The compressions `/gzip`, `/brotli/<n>` and `/zstd/<n>` send.
enum BodyEncoding: String {
    case gzip
    case brotli = "br"
    case zstd

    /// `bytes` compressed, or `nil` if the encoder failed. zstd frames carry a checksum, so damage in
    /// any byte is detectable; brotli streams have none.
    func compress(_ bytes: [UInt8]) -> [UInt8]? {
        switch self {
        case .gzip:
            return BodyEncoding.gzipped(bytes)
        case .brotli:
            var size = BrotliEncoderMaxCompressedSize(bytes.count)
            var output = [UInt8](repeating: 0, count: max(size, 16))
            size = output.count
            // Quality 5 of 11, the standard 4 MiB window: fast enough for bodies made per request.
            let ok = BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, bytes.count, bytes, &size, &output)
            guard ok == BROTLI_TRUE else { return nil }
            return Array(output[..<size])
        case .zstd:
            guard let context = ZSTD_createCCtx() else { return nil }
            defer { ZSTD_freeCCtx(context) }
            _ = ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
            var output = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
            let size = ZSTD_compress2(context, &output, output.count, bytes, bytes.count)
            guard ZSTD_isError(size) == 0 else { return nil }
            return Array(output[..<size])
        }
    }
}

extension BodyEncoding {
    /// `bytes` as one gzip member (zlib's default level), or `nil` if zlib failed.
    private static func gzipped(_ bytes: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        // 15 bits of window, plus 16: a gzip header and trailer instead of zlib's.
        guard deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                            ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var input = bytes
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))))
        let status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        return Array(output[..<Int(stream.total_out)])
    }

    /// Whether an `Accept-Encoding` (its comma-separated codings) takes gzip: a `gzip` or `x-gzip` coding
    /// with a q-value above 0, or, when it names neither, `*` with one.
    static func acceptsGzip(_ codings: [String]) -> Bool {
        var gzip: Double?
        var any: Double?
        for coding in codings {
            let parts = coding.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            let name = parts.first?.lowercased() ?? ""
            let quality = parts.dropFirst().first { $0.lowercased().hasPrefix("q=") }.map { Double($0.dropFirst(2)) ?? 0 } ?? 1
            if name == "gzip" || name == "x-gzip" { gzip = quality } else if name == "*" { any = quality }
        }
        return (gzip ?? any ?? 0) > 0
    }
}

extension TestServerHandler {
    /// `/gzip`: 11,000 bytes of text with `Vary: Accept-Encoding`, gzip-compressed (`Content-Encoding:
    /// gzip`, the compressed length as `Content-Length`) when the request accepts gzip. A HEAD gets the
    /// plain text's head.
    func serveGzipText(_ context: ChannelHandlerContext, _ request: IncomingRequest) {
        var headers = HTTPHeaders()
        headers.add(name: "Vary", value: "Accept-Encoding")
        let text = String(repeating: "hello gzip ", count: 1000)
        guard !request.isHead, BodyEncoding.acceptsGzip(request.head.headers[canonicalForm: "accept-encoding"].map(String.init)) else {
            return respondText(context, request, .ok, text, contentType: "text/plain", headers: headers)
        }
        guard let compressed = BodyEncoding.gzip.compress(Array(text.utf8)) else {
            return respondText(context, request, .internalServerError, "gzip compression failed\n")
        }
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Content-Encoding", value: "gzip")
        respond(context, request, .ok, headers: headers, body: context.channel.allocator.buffer(bytes: compressed))
    }

    /// `/brotli/<n>` and `/zstd/<n>`: `n` bytes of the `/bytes` pattern (`zeros=1`: `n` zero bytes, a
    /// decompression bomb when `n` is large) with `Content-Encoding: br` or `zstd`, framed by a
    /// `Content-Length` that matches what is sent. `cut=<k>` leaves off the last `k` compressed
    /// bytes (the stream never ends); `damage=1` inverts every compressed byte from the middle on;
    /// `chunkSize=<m>` writes the compressed bytes `m` at a time, each flushed.
    func serveEncoded(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ encoding: BodyEncoding,
                      _ argument: String) {
        guard let length = integer(argument, in: 0...maximumEncodedSize) else {
            return badRequest(context, request, "size must be 0...\(maximumEncodedSize)")
        }
        let query = request.uri
        let plain = query.query["zeros"] == "1" ? [UInt8](repeating: 0, count: length)
            : Array(BytePattern.buffer(0..<length, allocator: context.channel.allocator).readableBytesView)
        guard var encoded = encoding.compress(plain) else {
            return respondText(context, request, .internalServerError, "\(encoding) compression failed\n")
        }
        if let cut = query.int("cut") {
            encoded.removeLast(min(max(cut, 0), encoded.count))
        }
        if query.query["damage"] == "1" {
            for index in (encoded.count / 2)..<encoded.count { encoded[index] ^= 0xFF }
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/octet-stream")
        headers.add(name: "Content-Encoding", value: encoding.rawValue)
        headers.add(name: "Content-Length", value: String(encoded.count))
        let (head, close) = makeHead(request, .ok, headers, close: false)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !request.isHead {
            let chunkSize = max(query.int("chunkSize") ?? encoded.count, 1)
            for start in stride(from: 0, to: encoded.count, by: chunkSize) {
                let piece = encoded[start..<min(start + chunkSize, encoded.count)]
                let buffer = context.channel.allocator.buffer(bytes: piece)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            }
        }
        finish(context, close: close)
    }
}
