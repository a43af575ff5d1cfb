import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An image body: its format and pixel size, read from the file header, and the bytes. There is no
/// UIKit or AppKit on Linux, and no decoding library is needed: hand `data` to one if you need pixels.
/// - Threading: an immutable value.
public struct Image: Sendable, Equatable {
    /// The image formats recognised from their headers.
    /// - Threading: an immutable value.
    public enum Format: String, Sendable {
        /// PNG (`image/png`).
        case png
        /// JPEG (`image/jpeg`).
        case jpeg
        /// GIF 87a or 89a (`image/gif`).
        case gif
        /// Windows bitmap (`image/bmp`).
        case bmp
        /// WebP, lossy, lossless or extended (`image/webp`).
        case webp
    }

    /// The format, from the header's signature.
    public let format: Format
    /// Width in pixels, from the header.
    public let pixelWidth: Int
    /// Height in pixels, from the header (positive for top-down bitmaps too).
    public let pixelHeight: Int
    /// The encoded image, as received.
    public let data: Data

    /// Reads format and size from the header; `nil` when the bytes are not a recognised image.
    public init?(data: Data) {
        guard let (format, width, height) = ImageHeader.parse([UInt8](data.prefix(ImageHeader.maximumScan))) else {
            return nil
        }
        self.format = format
        self.pixelWidth = width
        self.pixelHeight = height
        self.data = data
    }
}

/// Returns an `Image` for image bodies (AFNetworking's `AFImageResponseSerializer`); a body that is not
/// a PNG, JPEG, GIF, BMP or WebP image is an error. An empty body is `nil`.
///
/// It accepts only the content types of the formats it can describe: `image/png`, `image/jpeg`,
/// `image/gif`, `image/bmp`, `image/x-bmp`, `image/x-ms-bmp`, `image/webp`. AFN's TIFF, ICO and XBM
/// types fail validation (`NSURLErrorCannotDecodeContentData`, the response attached) instead of
/// failing later in decoding.
/// - Threading: as `HTTPResponseSerializer` (no settings of its own); any thread.
open class ImageResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    /// A serializer for the image content types.
    public required init() {
        super.init()
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
    }

    override class var defaultAcceptableContentTypes: Set<String>? {
        ["image/png", "image/jpeg", "image/gif", "image/bmp", "image/x-bmp", "image/x-ms-bmp", "image/webp"]
    }
    override var gatesOnContentType: Bool { true }

    override func decodedObject(from data: Data?, textEncodingName: @autoclosure () -> String?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        guard let image = Image(data: data) else {
            throw decodingError("The body is not a PNG, JPEG, GIF, BMP or WebP image.")
        }
        return image
    }
}

/// Reads an image's format and pixel size from the first bytes of the file.
/// - Threading: pure functions.
enum ImageHeader {
    /// JPEG size markers can sit after large metadata segments; this much is scanned at most.
    static let maximumScan = 1 << 20

    static func parse(_ bytes: [UInt8]) -> (Image.Format, Int, Int)? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), bytes.count >= 24,
           bytes[12...15].elementsEqual(Array("IHDR".utf8)) {
            return positive(.png, bigEndian(bytes, 16, 4), bigEndian(bytes, 20, 4))
        }
        if bytes.starts(with: Array("GIF87a".utf8)) || bytes.starts(with: Array("GIF89a".utf8)), bytes.count >= 10 {
            return positive(.gif, littleEndian(bytes, 6, 2), littleEndian(bytes, 8, 2))
        }
        if bytes.starts(with: [0x42, 0x4D]), bytes.count >= 26 {
            let height = Int32(truncatingIfNeeded: littleEndian(bytes, 22, 4))
            return positive(.bmp, littleEndian(bytes, 18, 4), Int(height.magnitude))
        }
        if bytes.count >= 30, bytes.starts(with: Array("RIFF".utf8)), bytes[8...11].elementsEqual(Array("WEBP".utf8)) {
            return webp(bytes)
        }
        if bytes.starts(with: [0xFF, 0xD8]) {
            return jpeg(bytes)
        }
        return nil
    }

    private static func webp(_ bytes: [UInt8]) -> (Image.Format, Int, Int)? {
        let chunk = String(decoding: bytes[12...15], as: UTF8.self)
        switch chunk {
        case "VP8 ":
            return positive(.webp, littleEndian(bytes, 26, 2) & 0x3FFF, littleEndian(bytes, 28, 2) & 0x3FFF)
        case "VP8L":
            guard bytes[20] == 0x2F else { return nil }
            let bits = littleEndian(bytes, 21, 4)
            return positive(.webp, (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            return positive(.webp, littleEndian(bytes, 24, 3) + 1, littleEndian(bytes, 27, 3) + 1)
        default:
            return nil
        }
    }

    /// Walks the JPEG segments to the first start-of-frame marker.
    private static func jpeg(_ bytes: [UInt8]) -> (Image.Format, Int, Int)? {
        var index = 2
        while index + 9 < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            if marker == 0xFF { index += 1; continue }
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { index += 2; continue }
            let length = bigEndian(bytes, index + 2, 2)
            guard length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC {
                return positive(.jpeg, bigEndian(bytes, index + 7, 2), bigEndian(bytes, index + 5, 2))
            }
            index += 2 + length
        }
        return nil
    }

    private static func positive(_ format: Image.Format, _ width: Int, _ height: Int) -> (Image.Format, Int, Int)? {
        width > 0 && height > 0 ? (format, width, height) : nil
    }

    private static func bigEndian(_ bytes: [UInt8], _ start: Int, _ count: Int) -> Int {
        guard start + count <= bytes.count else { return 0 }
        return bytes[start..<(start + count)].reduce(0) { $0 << 8 | Int($1) }
    }

    private static func littleEndian(_ bytes: [UInt8], _ start: Int, _ count: Int) -> Int {
        guard start + count <= bytes.count else { return 0 }
        return bytes[start..<(start + count)].reversed().reduce(0) { $0 << 8 | Int($1) }
    }
}
