import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// Where a response body goes when it is written as it arrives: a file (`--output`, `--download`) or
/// standard output. The library writes to it on its network thread; the first write sees the response
/// head (the operation's `response` is set before any body byte), which decides whether a continued
/// download appends (206) or starts over (200), and whether gzip/deflate is decoded.
/// - Threading: its changing state is one value owned by a lock.
final class BodySink: OutputStream {
    /// Where the bytes go: a path opened when the first byte comes (named then, from the response,
    /// when `path` is `nil`), or standard output.
    enum Target {
        case file(path: String?)
        case standardOutput
    }

    /// What the sink has decided and done so far.
    private struct Progress {
        var handle: FileHandle?
        var decoder: BodyDecoder?
        var decided = false
        var discarding = false
        var failure: Error?
        var status = Stream.Status.notOpen
        var written: Int64 = 0
        var chosenPath: String?
        var resumed = false
    }

    private let progress = Locked(Progress())
    private let target: Target
    private let resumeOffset: Int64
    /// Whether every byte is appended to what the file holds (a paused operation's continuation: the
    /// library itself drops a prefix a server sends again).
    private let appends: Bool
    private let decodes: Bool
    private let keepsOnly2xx: Bool
    /// The response head as the first write sees it, and the file name for a download without `-o`.
    private let response: @Sendable () -> HTTPURLResponse?
    private let nameFor: @Sendable (HTTPURLResponse?) -> String

    /// A sink into `target`; `resumeOffset` bytes are already in the file (`--continue`); `decodes`
    /// inflates a gzip/deflate body; `keepsOnly2xx` drops the body of any other status (a download).
    init(target: Target, resumeOffset: Int64 = 0, appends: Bool = false, decodes: Bool, keepsOnly2xx: Bool,
         response: @escaping @Sendable () -> HTTPURLResponse?,
         nameFor: @escaping @Sendable (HTTPURLResponse?) -> String = { _ in "index" }) {
        self.target = target
        self.resumeOffset = resumeOffset
        self.appends = appends
        self.decodes = decodes
        self.keepsOnly2xx = keepsOnly2xx
        self.response = response
        self.nameFor = nameFor
        super.init(toMemory: ())
    }

    required init(toMemory: ()) {
        target = .standardOutput
        resumeOffset = 0
        appends = false
        decodes = false
        keepsOnly2xx = false
        response = { nil }
        nameFor = { _ in "index" }
        super.init(toMemory: ())
    }

    /// Opens (creating or truncating) the file at `path` before anything is sent, so that a folder
    /// that is missing or not writable is an error naming it, not a failure after the transfer.
    static func prepare(path: String, truncating: Bool) throws {
        let fd = Foundation.open(path, O_WRONLY | O_CREAT | (truncating ? O_TRUNC : 0), 0o644)
        guard fd >= 0 else {
            throw RequestFailure(status: 1, message: "cannot write '\(path)': \(String(cString: strerror(errno)))")
        }
        _ = Foundation.close(fd)
    }

    override func open() { progress.update { $0.status = .open } }

    override func close() {
        progress.update { progress in
            try? progress.handle?.close()
            progress.handle = nil
            if progress.status != .error { progress.status = .closed }
        }
    }

    override var streamStatus: Stream.Status { progress.value.status }
    override var streamError: Error? { progress.value.failure }
    override var hasSpaceAvailable: Bool { true }

    /// Bytes written (after decoding), the resumed prefix not counted.
    var bytesWritten: Int64 { progress.value.written }
    /// Whether the body continued the file's bytes (a 206 to `--continue`).
    var didResume: Bool { progress.value.resumed }
    /// The file the body went to, once chosen.
    var path: String? { progress.value.chosenPath }
    /// Whether the body was dropped (a download's error status).
    var discarded: Bool { progress.value.discarding }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        // The head is read before the lock is taken: reading it takes the operation's own lock.
        let head = progress.value.decided ? nil : response()
        return progress.update { progress in
            do {
                if !progress.decided { try decide(&progress, head: head) }
                if progress.discarding { return length }
                var data = Data(bytes: buffer, count: length)
                if let decoder = progress.decoder { data = try decoder.decode(data) }
                try progress.handle?.write(contentsOf: data)
                progress.written += Int64(data.count)
                return length
            } catch {
                progress.failure = error
                progress.status = .error
                return -1
            }
        }
    }

    /// At the end of the body: a decoder still mid-stream means the body was cut short; an empty
    /// body still gets its (empty) file.
    func finish() throws {
        let head = progress.value.decided ? nil : response()
        try progress.update { progress in
            if !progress.decided { try decide(&progress, head: head) }
            if let decoder = progress.decoder, !progress.discarding { try decoder.finish() }
        }
    }

    /// Chooses (once) where the body goes from the response head.
    private func decide(_ progress: inout Progress, head: HTTPURLResponse?) throws {
        progress.decided = true
        if keepsOnly2xx, let status = head?.statusCode, !(200..<300).contains(status) {
            progress.discarding = true
            return
        }
        if decodes { progress.decoder = BodyDecoder(contentEncoding: head?.value(forHTTPHeaderField: "Content-Encoding")) }
        switch target {
        case .standardOutput:
            progress.handle = FileHandle.standardOutput
        case .file(let given):
            let path = given ?? nameFor(head)
            progress.chosenPath = path
            let continues = resumeOffset > 0 && head?.statusCode == 206
            if continues {
                // The part must start where the file ends, or the file would mix two pieces.
                let range = head?.value(forHTTPHeaderField: "Content-Range") ?? ""
                let first = range.lowercased().hasPrefix("bytes ")
                    ? Int64(range.dropFirst(6).prefix { $0 != "-" }) : nil
                guard first == resumeOffset else {
                    throw RequestFailure(status: 1, message: "Unexpected Content-Range returned ('\(range)') for the requested "
                                         + "Range (\"bytes=\(resumeOffset)-\")")
                }
            }
            progress.resumed = continues
            let fd = Foundation.open(path, O_WRONLY | O_CREAT | (continues || appends ? O_APPEND : O_TRUNC), 0o644)
            guard fd >= 0 else {
                throw RequestFailure(status: 1, message: "cannot write '\(path)': \(String(cString: strerror(errno)))")
            }
            progress.handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        }
    }
}

/// httpie's `--download` conventions: the file name from `Content-Disposition` or the URL (an
/// extension from the type when the name has none), never overwriting a file (`name-1`, `name-2`…).
enum DownloadNaming {
    /// The name for the response of a request to `url`.
    static func fileName(url: URL, response: HTTPURLResponse?) -> String {
        if let disposition = response?.value(forHTTPHeaderField: "Content-Disposition"),
           let name = nameFromDisposition(disposition) {
            return unique(name)
        }
        var name = FetchPlan.safeName(for: url)
        if name == FetchPlan.fallbackName || !name.contains("."),
           let type = response?.value(forHTTPHeaderField: "Content-Type")?.split(separator: ";").first,
           let ext = extensionFor(type: type.trimmingCharacters(in: .whitespaces).lowercased()) {
            name += "." + ext
        }
        return unique(name)
    }

    /// `filename="x"` (or unquoted), reduced to a harmless last path component.
    private static func nameFromDisposition(_ value: String) -> String? {
        guard let range = value.range(of: "filename=", options: .caseInsensitive) else { return nil }
        var name = String(value[range.upperBound...]).split(separator: ";").first.map(String.init) ?? ""
        name = name.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        guard let url = URL(string: "http://h/" + (name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "")) else {
            return nil
        }
        let safe = FetchPlan.safeName(for: url)
        return safe == FetchPlan.fallbackName && name.isEmpty ? nil : safe
    }

    private static func extensionFor(type: String) -> String? {
        ["text/plain": "txt", "application/json": "json", "text/html": "html", "application/octet-stream": "bin",
         "image/png": "png", "image/jpeg": "jpg", "application/pdf": "pdf", "application/zip": "zip",
         "text/csv": "csv", "application/xml": "xml"][type]
    }

    /// `name`, or `name-1`, `name-2`, … — the first that does not exist.
    private static func unique(_ name: String) -> String {
        var candidate = name
        var attempt = 0
        while FileManager.default.fileExists(atPath: candidate) {
            attempt += 1
            candidate = "\(name)-\(attempt)"
        }
        return candidate
    }

    /// The size of the file at `path`, 0 when there is none.
    static func existingSize(_ path: String) -> Int64 {
        FetchPlan.fileSize(URL(fileURLWithPath: path)) ?? 0
    }
}

/// The download's progress on standard error: a bar redrawn in place on a terminal (the display
/// `onet fetch` uses), `Downloading to …` and `Done. …` lines either way.
final class DownloadProgress: @unchecked Sendable {   // immutable after init; the display locks itself
    private let display: FetchDisplay?
    private let start = Date()

    /// Progress for a download that already holds `resumedBytes`.
    init(resumedBytes: Int64, name: String) {
        display = isatty(STDERR_FILENO) == 1 ? FetchDisplay(files: [(name, resumedBytes)], interactive: true) : nil
        display?.start()
        display?.started(0)
    }

    /// Called with each piece's running total.
    func progress(received: Int64, expected: Int64) {
        display?.progress(0, received: received, expected: expected)
    }

    /// Ends the display and prints the summary line.
    func finish(bytes: Int64, path: String, ok: Bool) {
        display?.finished(0, ok: ok, bytes: bytes)
        display?.stop()
        let seconds = max(Date().timeIntervalSince(start), 0.001)
        let line = ok
            ? "Done. \(FetchDisplay.bytes(bytes)) in \(String(format: "%.2f", seconds))s (\(FetchDisplay.bytes(Int64(Double(bytes) / seconds)))/s) to \(path)"
            : "Interrupted. \(FetchDisplay.bytes(bytes)) written to \(path)"
        StandardStreams.write(line + "\n", to: .standardError)
    }
}
