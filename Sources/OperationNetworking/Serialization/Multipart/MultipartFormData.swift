import Foundation

/// Suggested packet size for `throttleBandwidth(withPacketSize:delay:)` on slow links (16 KiB).
public let UploadStream3GSuggestedPacketSize = 16384
/// Suggested delay for `throttleBandwidth(withPacketSize:delay:)` on slow links (0.2 s).
public let UploadStream3GSuggestedDelay: TimeInterval = 0.2

/// Builds a `multipart/form-data` body part by part (AFNetworking's `AFMultipartFormData`).
///
/// Files and streams are read during the upload, piece by piece as curl asks for bytes, never loaded
/// whole; `Content-Length` is exact. A missing or unreadable file is an error when it is appended.
public protocol MultipartFormData: AnyObject {
    /// A file part named `name`; the file name is the URL's last component and the MIME type comes
    /// from its extension (`application/octet-stream` when unknown).
    func appendPart(withFileURL fileURL: URL, name: String) throws
    /// A file part with an explicit file name and MIME type.
    func appendPart(withFileURL fileURL: URL, name: String, fileName: String, mimeType: String) throws
    /// A part read from `inputStream`, which must deliver exactly `length` bytes (fewer fail the upload).
    func appendPart(with inputStream: InputStream?, name: String, fileName: String, length: Int64, mimeType: String)
    /// A part from data, with a file name and MIME type.
    func appendPart(withFileData data: Data, name: String, fileName: String, mimeType: String)
    /// A plain form field.
    func appendPart(withFormData data: Data, name: String)
    /// A part with exactly these headers.
    func appendPart(withHeaders headers: [String: String]?, body: Data)
    /// Limits each read to `packetSize` bytes and waits `delay` seconds between reads (without blocking
    /// other transfers). Default: no limit.
    func throttleBandwidth(withPacketSize packetSize: Int, delay: TimeInterval)
}

/// The parts of one multipart body and its boundary.
/// - Threading: filled on the caller's thread, then handed (as a `MultipartBodyStream`) to the transfer.
final class MultipartFormDataBuilder: MultipartFormData {
    /// A part's body source.
    enum Body {
        case data(Data)
        case file(URL)
        case stream(InputStream?)
    }

    /// One part: its header block and body.
    struct Part {
        var headers: [(String, String)]
        var body: Body
        var length: Int64
    }

    /// `Boundary+` and 16 random hex digits, new for every body.
    let boundary = String(format: "Boundary+%08X%08X", UInt32.random(in: 0...UInt32.max), UInt32.random(in: 0...UInt32.max))
    private(set) var parts: [Part] = []
    private(set) var packetSize = Int.max
    private(set) var delay: TimeInterval = 0

    func appendPart(withFileURL fileURL: URL, name: String) throws {
        try appendPart(withFileURL: fileURL, name: name, fileName: fileURL.lastPathComponent,
                       mimeType: MIMETypes.type(forExtension: fileURL.pathExtension))
    }

    func appendPart(withFileURL fileURL: URL, name: String, fileName: String, mimeType: String) throws {
        guard fileURL.isFileURL else {
            throw LibraryError.requestSerialization(.notAFileURL, "Expected URL to be a file URL", url: fileURL)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: fileURL.path, isDirectory: &isDirectory), !isDirectory.boolValue,
              FileManager.default.isReadableFile(atPath: fileURL.path) else {
            throw LibraryError.requestSerialization(.fileNotReadable, "File URL not reachable.", url: fileURL)
        }
        let attributes = try FileManager.default.attributesOfItem(atPath: fileURL.path)
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        parts.append(Part(headers: fileHeaders(name: name, fileName: fileName, mimeType: mimeType), body: .file(fileURL),
                          length: size))
    }

    func appendPart(with inputStream: InputStream?, name: String, fileName: String, length: Int64, mimeType: String) {
        parts.append(Part(headers: fileHeaders(name: name, fileName: fileName, mimeType: mimeType),
                          body: .stream(inputStream), length: max(0, length)))
    }

    func appendPart(withFileData data: Data, name: String, fileName: String, mimeType: String) {
        parts.append(Part(headers: fileHeaders(name: name, fileName: fileName, mimeType: mimeType), body: .data(data),
                          length: Int64(data.count)))
    }

    func appendPart(withFormData data: Data, name: String) {
        parts.append(Part(headers: [("Content-Disposition", "form-data; name=\"\(name)\"")], body: .data(data),
                          length: Int64(data.count)))
    }

    func appendPart(withHeaders headers: [String: String]?, body: Data) {
        let ordered = (headers ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        parts.append(Part(headers: ordered, body: .data(body), length: Int64(body.count)))
    }

    func throttleBandwidth(withPacketSize packetSize: Int, delay: TimeInterval) {
        self.packetSize = max(1, packetSize)
        self.delay = max(0, delay)
    }

    private func fileHeaders(name: String, fileName: String, mimeType: String) -> [(String, String)] {
        [("Content-Disposition", "form-data; name=\"\(name)\"; filename=\"\(fileName)\""), ("Content-Type", mimeType)]
    }
}
