// Fuzzes multipart bodies: HTTPRequestSerializer.multipartFormRequest with fuzzed form parameters and
// parts (form fields, file data, raw headers, input streams that deliver fewer or more bytes than they
// declare, a missing stream, a file on disk, bad file URLs) and a fuzzed packet size, then reads the
// MultipartBodyStream out in fuzzed chunk sizes.
//
// Invariants besides not crashing: building fails with `invalidHeader` exactly when a part header or MIME
// type cannot be written (CR, LF, NUL; a name that is not a token); no read returns more than asked or more than the packet size; a body
// whose parts all deliver their declared length comes out exactly `Content-Length` bytes long, framed by
// the boundary, and ends with status `.atEnd`; one with a short part fails with -1 and a `streamError`
// before reaching `Content-Length`.
import FuzzSupport
import Foundation
@testable import OperationNetworking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small file to attach, written once per process.
private let attachment: URL? = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("onet-fuzz-multipart-\(getpid()).txt")
    return (try? Data("file part body\n".utf8).write(to: url)).map { url }
}()

/// What the fuzzed program appended, as far as the body's fate goes.
private final class Plan {
    var shortPart = false
    var packetSize = Int.max
    /// A part header that cannot be written (a name that is not a token, a value or MIME type with CR,
    /// LF or NUL) was appended: building the request must then fail with `invalidHeader`, and only then.
    var unwritableHeader = false

    func note(headerName name: String, value: String) {
        if !HTTPToken.isToken(name) || !isWritable(value) { unwritableHeader = true }
    }

    func note(mimeType: String) {
        if !isWritable(mimeType) { unwritableHeader = true }
    }

    private func isWritable(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }
}

private func appendParts(_ input: inout FuzzInput, to form: MultipartFormData, plan: Plan) throws {
    for _ in 0..<(input.byte() % 8) {
        switch input.byte() % 8 {
        case 0: form.appendPart(withFormData: Data(input.bytes()), name: input.string(limit: 16))
        case 1:
            let (data, name, fileName, mimeType) = (Data(input.bytes()), input.string(limit: 16), input.string(limit: 16),
                                                    input.string(limit: 16))
            plan.note(mimeType: mimeType)
            form.appendPart(withFileData: data, name: name, fileName: fileName, mimeType: mimeType)
        case 2:
            var headers: [String: String] = [:]
            for _ in 0..<(input.byte() % 4) { headers[input.string(limit: 16)] = input.string(limit: 16) }
            let given = input.bool() ? nil : headers
            given?.forEach { plan.note(headerName: $0.key, value: $0.value) }
            form.appendPart(withHeaders: given, body: Data(input.bytes()))
        case 3:
            // A stream declaring up to 4 bytes more or fewer than it holds: more is a short part.
            let body = input.bytes()
            let declared = Int64(body.count) + Int64(Int(input.byte() % 9) - 4)
            if declared > Int64(body.count) { plan.shortPart = true }
            form.appendPart(with: InputStream(data: Data(body)), name: input.string(limit: 16), fileName: "s.bin",
                            length: declared, mimeType: "application/octet-stream")
        case 4:
            let declared = Int64(Int(input.byte() % 4) - 1)
            if declared > 0 { plan.shortPart = true }
            form.appendPart(with: nil, name: "missing", fileName: "m.bin", length: declared, mimeType: "text/plain")
        case 5:
            if let attachment { try form.appendPart(withFileURL: attachment, name: input.string(limit: 16)) }
        case 6:
            let size = Int(Int8(bitPattern: input.byte()))
            form.throttleBandwidth(withPacketSize: size, delay: 0)
            plan.packetSize = max(1, size)
        default:
            // Must throw (not a file URL, or no such file), and leave the body as it was.
            let url = input.bool() ? URL(string: "http://fuzz.invalid/f") : URL(fileURLWithPath: "/nonexistent/\(input.string(limit: 8))")
            if let url {
                do {
                    try form.appendPart(withFileURL: url, name: "bad")
                    FuzzDriver.fail("appended \(url) as a file part")
                } catch {}
            }
        }
    }
}

private func read(_ stream: InputStream, input: inout FuzzInput, contentLength: Int64, boundary: String, plan: Plan) {
    var body = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 4096)
    stream.open()
    defer { stream.close() }
    for _ in 0..<100_000 {
        let wanted = Int(input.byte() % 255) * 16 + 1   // 1 ... 4065 (empty input: 1 byte at a time)
        let count = buffer.withUnsafeMutableBufferPointer { chunk -> Int in
            guard let base = chunk.baseAddress else { return -1 }
            return stream.read(base, maxLength: wanted)
        }
        if count < 0 {
            guard plan.shortPart else { FuzzDriver.fail("read failed without a short part: \(String(describing: stream.streamError))") }
            guard stream.streamError != nil else { FuzzDriver.fail("read failed without a streamError") }
            guard Int64(body.count) < contentLength else { FuzzDriver.fail("failed after the whole Content-Length") }
            return
        }
        guard count <= wanted, count <= plan.packetSize else {
            FuzzDriver.fail("read \(count) bytes; asked \(wanted), packet size \(plan.packetSize)")
        }
        if count == 0 { break }
        body += buffer[0..<count]
        guard Int64(body.count) <= contentLength else { FuzzDriver.fail("body longer than Content-Length \(contentLength)") }
    }
    guard !plan.shortPart else { FuzzDriver.fail("a short part was not noticed; \(body.count) of \(contentLength) bytes") }
    guard Int64(body.count) == contentLength else { FuzzDriver.fail("body of \(body.count) bytes, Content-Length \(contentLength)") }
    guard stream.streamStatus == .atEnd else { FuzzDriver.fail("status \(stream.streamStatus.rawValue) at the end of the body") }
    guard body.starts(with: Array("--\(boundary)\r\n".utf8)) || body.starts(with: Array("\r\n--\(boundary)--".utf8)),
          body.reversed().starts(with: Array("\r\n--\(boundary)--\r\n".utf8).reversed()) else {
        FuzzDriver.fail("body not framed by the boundary \(boundary)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzMultipart(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    var parameters: [String: Any] = [:]
    for _ in 0..<(input.byte() % 4) {
        parameters[input.string(limit: 16)] = input.bool() ? input.string() as Any : [input.string(limit: 8), NSNull()] as [Any]
    }
    let plan = Plan()
    let request: URLRequest
    do {
        var program = input
        request = try HTTPRequestSerializer().multipartFormRequest(method: "POST", urlString: "http://fuzz.invalid/upload",
                                                                 parameters: parameters) { form in
            try appendParts(&program, to: form, plan: plan)
        }
        input = program
    } catch {
        let code = (error as NSError).code
        guard plan.unwritableHeader, code == RequestSerializationErrorCode.invalidHeader.rawValue else {
            FuzzDriver.fail("building the request threw \(error)")
        }
        return 0
    }
    if plan.unwritableHeader { FuzzDriver.fail("a part header that cannot be written was accepted") }
    guard let stream = request.httpBodyStream else {
        guard parameters.isEmpty else { FuzzDriver.fail("parameters but no body stream") }
        return 0
    }
    guard let lengthText = request.value(forHTTPHeaderField: "Content-Length"), let contentLength = Int64(lengthText),
          let type = request.value(forHTTPHeaderField: "Content-Type"),
          let boundaryRange = type.range(of: "boundary=") else {
        FuzzDriver.fail("a body stream without Content-Length or boundary")
    }
    read(stream, input: &input, contentLength: contentLength, boundary: String(type[boundaryRange.upperBound...]), plan: plan)
    return 0
}

private func seeds() -> [String: [UInt8]] {
    func text(_ string: String) -> [UInt8] { [UInt8(string.utf8.count)] + Array(string.utf8) }
    return [
        "fields": [1] + text("user") + [1] + text("ada") + [1, 0] + text("bio") + text("name") + [7, 7, 7],
        "file-data": [0, 1, 1] + text("hello") + text("doc") + text("a.txt") + text("text/plain") + [0, 3, 200],
        "stream-short": [0, 1, 3] + text("abc") + [8] + text("s") + [1, 1],
        "stream-long-throttled": [0, 2, 6, 5, 3] + text("abcdef") + [0] + text("s") + [2, 2, 2],
        "headers-file-missing": [0, 4, 2, 1] + text("X-A") + text("b") + [0] + text("body") + [5] + text("f")
            + [4, 1, 7, 1] + [15, 15],
    ]
}

exit(FuzzDriver.main(seeds: seeds) { fuzzMultipart($0, $1) })
