import Foundation

/// Suggested packet size for `throttleBandwidth(withPacketSize:delay:)` on slow links (16 KiB).
public let UploadStream3GSuggestedPacketSize = 16384
/// Suggested delay for `throttleBandwidth(withPacketSize:delay:)` on slow links (0.2 s).
public let UploadStream3GSuggestedDelay: TimeInterval = 0.2

/// Builds a `multipart/form-data` body part by part (AFNetworking's `AFMultipartFormData`).
///
/// Files and streams are read during the upload, piece by piece as curl asks for bytes, never loaded
/// whole; `Content-Length` is exact. A missing or unreadable file is an error when it is appended.
///
/// Names and file names are written into `Content-Disposition`'s quoted `name=` and `filename=` as
/// RFC 7578 §4.2 and browsers (the WHATWG form encoding) do: `"` as `%22`, CR as `%0D`, LF as `%0A`,
/// and NUL as `%00`; everything else as given, in UTF-8. So no name or file name (an uploaded file's own
/// name included) can end the parameter or add a header line to its part. A MIME type, or a header
/// of `appendPart(withHeaders:body:)`, that cannot be written as it is (a name that is not an HTTP
/// token, a value with CR, LF or NUL) makes `multipartFormRequest(method:urlString:parameters:constructingBodyWith:)`
/// throw `RequestSerializationErrorCode.invalidHeader` once the block returns; the methods that
/// throw themselves throw it at once.
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
    /// A part with exactly these headers, sorted by name. Each name must be an HTTP token and each
    /// value free of CR, LF and NUL (else the request is not built: `invalidHeader`); values are
    /// written as given, so a `Content-Disposition` here is the caller's to escape.
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
    /// The first part header that could not be written (the protocol's non-throwing methods record
    /// it; `multipartFormRequest` throws it), and the URL of the request the body is for.
    private(set) var failure: NSError?
    private let requestURL: URL?

    init(requestURL: URL? = nil) {
        self.requestURL = requestURL
    }

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
        if let invalid = invalidHeader(name: "Content-Type", value: mimeType) { throw invalid }
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
        parts.append(Part(headers: [("Content-Disposition", "form-data; name=\"\(MultipartFormDataBuilder.escaped(name))\"")],
                          body: .data(data), length: Int64(data.count)))
    }

    func appendPart(withHeaders headers: [String: String]?, body: Data) {
        let ordered = (headers ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        for (name, value) in ordered {
            if let invalid = invalidHeader(name: name, value: value) { return record(invalid) }
        }
        parts.append(Part(headers: ordered, body: .data(body), length: Int64(body.count)))
    }

    func throttleBandwidth(withPacketSize packetSize: Int, delay: TimeInterval) {
        self.packetSize = max(1, packetSize)
        self.delay = max(0, delay)
    }

    /// The headers of a file part; a MIME type that cannot be a header value is recorded as the failure.
    private func fileHeaders(name: String, fileName: String, mimeType: String) -> [(String, String)] {
        if let invalid = invalidHeader(name: "Content-Type", value: mimeType) { record(invalid) }
        let disposition = "form-data; name=\"\(MultipartFormDataBuilder.escaped(name))\"; "
            + "filename=\"\(MultipartFormDataBuilder.escaped(fileName))\""
        return [("Content-Disposition", disposition), ("Content-Type", mimeType)]
    }

    /// `text` as it goes between the quotes of `name=` or `filename=`: `"`, CR, LF and NUL
    /// percent-encoded (RFC 7578 §4.2, as browsers send them), everything else as is.
    static func escaped(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x22 || $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "%22"
            case "\r": result += "%0D"
            case "\n": result += "%0A"
            case "\0": result += "%00"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The error for a part header that would break the part's head, `nil` for a good one.
    private func invalidHeader(name: String, value: String) -> NSError? {
        let valueIsClean = !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
        if HTTPToken.isToken(name) && valueIsClean { return nil }
        return LibraryError.requestSerialization(
            .invalidHeader, "The multipart part header \(name.debugDescription) cannot be written: a name must be an "
            + "HTTP token and a value free of CR, LF and NUL.", url: requestURL)
    }

    /// Keeps the first failure: the request is not built once the block returns.
    private func record(_ error: NSError) {
        if failure == nil { failure = error }
    }
}
