import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) import OperationNetworking

/// One file `onet fetch` downloads: where it comes from, its name inside the target directory, and
/// how this run gets it (fresh, continued from a paused archive, or not at all because it is done).
struct FetchJob: Sendable {
    /// How the job starts in this run.
    enum Start: Sendable {
        /// From the first byte, truncating whatever is at the destination.
        case fresh
        /// Continues a paused operation archived by an interrupted run; the file holds `bytes` bytes.
        case paused(archive: Data, bytes: Int64)
        /// Finished by an earlier run (the file holds `bytes` bytes): not fetched again.
        case done(bytes: Int64)
    }

    /// The URL as given (the state file matches runs on its absolute string without user information).
    let url: URL
    /// The file name inside the target directory: one safe path component, unique in the run.
    let name: String
    /// How this run gets the file.
    let start: Start
}

/// Reading the URL list and choosing file names, with no network involved (the tests run it directly).
enum FetchPlan {
    /// The name used when a URL has no usable last path component (`http://host/`).
    static let fallbackName = "index"
    /// Longest file name in UTF-8 bytes; most Linux file systems stop at 255.
    static let maximumNameBytes = 200

    /// The URLs of `--from` (one a line; blank lines and `#` comments skipped) followed by the
    /// positional ones. Throws a `ValidationError` naming the file or the line that is wrong.
    static func urls(from file: String?, arguments: [String]) throws -> [URL] {
        var found: [URL] = []
        if let file {
            let text: String
            do {
                text = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                throw ValidationError("--from: cannot read '\(file)': \(reason(error))")
            }
            for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
                if line.isEmpty || line.hasPrefix("#") { continue }
                guard let url = httpURL(line) else {
                    throw ValidationError("--from: line \(index + 1) of '\(file)' is not an http(s) URL: '\(line)'")
                }
                found.append(url)
            }
        }
        for argument in arguments {
            guard let url = httpURL(argument) else {
                throw ValidationError("<urls>: not an http(s) URL: '\(argument)'")
            }
            found.append(url)
        }
        guard !found.isEmpty else {
            throw ValidationError("no URLs: give them as arguments or in a file with --from")
        }
        return found
    }

    /// The login written in `url` (`user:password@`), as a credential for this run only, or `nil`. A
    /// paused download's archive keeps no login, so the URL given again brings it back this way (answered
    /// to the server's 401 challenge).
    static func credential(in url: URL) -> URLCredential? {
        guard let user = url.user else { return nil }
        return URLCredential(user: user, password: url.password ?? "", persistence: .none)
    }

    /// `text` as an absolute http or https URL with a host, or `nil`.
    static func httpURL(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else { return nil }
        return url
    }

    /// A file name for `url` that is a single, harmless path component: the last path component,
    /// percent-decoded, with path separators, control characters (C0 and C1) and invisible format
    /// characters (bidi overrides, which would reorder the name on a terminal) replaced, leading dots dropped (no
    /// hidden files, no `..`, no clash with the state file) and the length bounded; `index` when
    /// nothing usable is left.
    static func safeName(for url: URL) -> String {
        let component = url.path.split(separator: "/").last.map(String.init) ?? ""
        let decoded = component.removingPercentEncoding ?? component
        var scalars = String.UnicodeScalarView()
        for scalar in decoded.unicodeScalars {
            let category = scalar.properties.generalCategory
            let harmful = scalar == "/" || scalar == "\\" || category == .control || category == .format
            scalars.append(harmful ? "_" : scalar)
        }
        var name = String(scalars).trimmingCharacters(in: .whitespaces)
        while name.hasPrefix(".") { name.removeFirst() }
        while name.utf8.count > maximumNameBytes { name.removeLast() }
        return name.isEmpty ? fallbackName : name
    }

    /// `name`, or `name-1.ext`, `name-2.ext`, … — the first that `isTaken` does not refuse.
    static func unique(_ name: String, isTaken: (String) -> Bool) -> String {
        guard isTaken(name) else { return name }
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let stem = dot.map { String(name[..<$0]) } ?? name
        let suffix = dot.map { String(name[$0...]) } ?? ""
        var counter = 1
        while isTaken("\(stem)-\(counter)\(suffix)") { counter += 1 }
        return "\(stem)-\(counter)\(suffix)"
    }

    /// The jobs of a run: each URL matched (in order, so duplicates pair up) with an entry of the
    /// previous run's state, when there is one; new URLs get a fresh unique name. An entry only
    /// continues if its file still has the size the state recorded; otherwise it starts over.
    /// `carried` are the state's entries for URLs this run does not fetch: they are kept in the
    /// state this run writes, so a run with another list of URLs does not lose them.
    static func jobs(for urls: [URL], in directory: URL, state: FetchState?) -> (jobs: [FetchJob], carried: [FetchState.Entry]) {
        var entries = state?.files ?? []
        var used = Set(entries.map(\.name))
        var jobs: [FetchJob] = []
        for url in urls {
            // The state keeps no user name or password (`FetchState.save`): the URL given again matches
            // its entry without them, and carries them again for this run.
            let key = url.archivedString
            if let index = entries.firstIndex(where: { $0.url == key || $0.url == url.absoluteString }) {
                let entry = entries.remove(at: index)
                // A tampered state must not name a file outside the directory.
                if entry.name == safeComponent(entry.name) {
                    jobs.append(FetchJob(url: url, name: entry.name, start: continuation(of: entry, in: directory)))
                    continue
                }
            }
            let name = unique(safeName(for: url)) { candidate in
                used.contains(candidate) || FileManager.default.fileExists(atPath: directory.appendingPathComponent(candidate).path)
            }
            used.insert(name)
            jobs.append(FetchJob(url: url, name: name, start: .fresh))
        }
        return (jobs, entries)
    }

    /// How a job recorded in the state continues, checked against the file on disk.
    private static func continuation(of entry: FetchState.Entry, in directory: URL) -> FetchJob.Start {
        let size = fileSize(directory.appendingPathComponent(entry.name))
        switch entry.status {
        case .done where size != nil && size == entry.bytes:
            return .done(bytes: entry.bytes ?? 0)
        case .paused where size != nil && size == entry.bytes:
            guard let archive = entry.archive, let bytes = entry.bytes else { return .fresh }
            return .paused(archive: archive, bytes: bytes)
        default:
            return .fresh
        }
    }

    /// `name` if it is one harmless path component (what `safeName` could have produced), else `""`.
    private static func safeComponent(_ name: String) -> String {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/"), !name.contains("\0"),
              name.utf8.count <= maximumNameBytes else { return "" }
        return name
    }

    /// The size of the file at `url`, or `nil` when there is none.
    static func fileSize(_ url: URL) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: url.path),
              let size = attributes[.size] as? NSNumber else { return nil }
        return size.int64Value
    }

    /// A short reason for a file error, without Foundation's long wrapper text.
    static func reason(_ error: Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
           let code = POSIXErrorCode(rawValue: Int32(underlying.code)) {
            return String(cString: strerror(code.rawValue))
        }
        switch (nsError.domain, nsError.code) {
        case (NSCocoaErrorDomain, NSFileReadNoSuchFileError), (NSCocoaErrorDomain, NSFileNoSuchFileError):
            return "no such file"
        case (NSCocoaErrorDomain, NSFileReadNoPermissionError):
            return "permission denied"
        case (NSCocoaErrorDomain, NSFileReadInapplicableStringEncodingError):
            return "not UTF-8 text"
        default:
            return nsError.localizedDescription
        }
    }
}

/// The state file an interrupted `onet fetch` leaves next to the files (`DIR/.onet-fetch-state`), JSON:
///
/// ```
/// {"version": 1,
///  "files": [{"url": "https://…/a.iso", "name": "a.iso", "status": "paused", "bytes": 1048576,
///             "archive": "<base64 of the paused HTTPRequestOperation, NSKeyedArchiver secure coding>"},
///            {"url": "https://…/b.iso", "name": "b.iso", "status": "done", "bytes": 2097152},
///            {"url": "https://…/c.iso", "name": "c.iso", "status": "pending"}]}
/// ```
///
/// `status` is `done` (complete, not fetched again), `paused` (`archive` continues it with a Range
/// request, appending to the `bytes` already in the file), `pending` (not started) or `failed` (fetched
/// again). `bytes` is the file's size when the state was written; a file whose size changed since starts over.
struct FetchState: Codable, Equatable {
    /// The file name inside the target directory; a leading dot keeps it out of the downloads' way.
    static let fileName = ".onet-fetch-state"
    /// The format this code writes and reads.
    static let currentVersion = 1

    /// What happened to one URL.
    enum Status: String, Codable {
        /// Saved completely; not fetched again.
        case done
        /// Paused part-way; `archive` continues it.
        case paused
        /// Not started (or cancelled before it could pause); fetched from the start.
        case pending
        /// Failed; fetched again from the start.
        case failed
    }

    /// One URL of the run.
    struct Entry: Codable, Equatable {
        /// The absolute URL string, as the run was given it.
        var url: String
        /// The file name in the directory.
        var name: String
        /// Where the file stands.
        var status: Status
        /// The file's size when the state was written (done and paused entries).
        var bytes: Int64?
        /// The paused operation's archive (`SafeArchive.archive`), paused entries only; base64 in JSON.
        var archive: Data?
    }

    /// The format version (`currentVersion`).
    var version = FetchState.currentVersion
    /// Every URL of the run, in order.
    var files: [Entry]

    /// The state in `directory`, `nil` when there is none; a state that cannot be read is an error
    /// naming the file (resuming blindly could mix two downloads in one file).
    static func load(from directory: URL) throws -> FetchState? {
        let file = directory.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        do {
            let state = try JSONDecoder().decode(FetchState.self, from: Data(contentsOf: file))
            guard state.version == currentVersion else {
                throw ValidationError("--to: '\(file.path)' has state version \(state.version); this onet reads \(currentVersion) (delete it to start over)")
            }
            return state
        } catch let error as ValidationError {
            throw error
        } catch {
            throw ValidationError("--to: cannot read the state file '\(file.path)' (delete it to start over): \(FetchPlan.reason(error))")
        }
    }

    /// Writes the state atomically (a crash leaves the old state or the new one, never half), readable
    /// by its owner only, and with no URL's user name or password: the file outlives the run, and the
    /// same command line gives the URL, login and all, again (the paused archives hold none either).
    func save(in directory: URL) throws {
        var stored = self
        for index in stored.files.indices {
            stored.files[index].url = URL(string: stored.files[index].url)?.archivedString ?? stored.files[index].url
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try FetchState.replacePrivately(directory.appendingPathComponent(FetchState.fileName), with: encoder.encode(stored))
    }

    /// Replaces `file` with `data`: written to a new file beside it, created with mode 0600 whatever the
    /// umask (`open` with `O_EXCL | O_NOFOLLOW`, then `fchmod` before a byte is written, as the umask may
    /// have taken bits from the mode), flushed, then renamed over `file`. Foundation's atomic write
    /// would create it 0644 less the umask, readable by everyone.
    private static func replacePrivately(_ file: URL, with data: Data) throws {
        let temporary = file.deletingLastPathComponent().appendingPathComponent("\(file.lastPathComponent).\(UUID().uuidString)")
        let descriptor = Foundation.open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw fileError(errno) }
        var failure: Int32 = fchmod(descriptor, 0o600) == 0 ? 0 : errno
        if failure == 0 { failure = writeAll(data, to: descriptor) }
        if failure == 0, fsync(descriptor) != 0 { failure = errno }
        if close(descriptor) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary.path, file.path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary.path)
            throw fileError(failure)
        }
    }

    /// Writes every byte of `data` to `descriptor`; `0`, or the `errno` that stopped it.
    private static func writeAll(_ data: Data, to descriptor: Int32) -> Int32 {
        data.withUnsafeBytes { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return 0 }
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return 0
        }
    }

    /// A file error with `code` underneath, which `FetchPlan.reason` shows as the system's message.
    private static func fileError(_ code: Int32) -> Error {
        NSError(domain: NSCocoaErrorDomain, code: NSFileWriteUnknownError,
                userInfo: [NSUnderlyingErrorKey: NSError(domain: NSPOSIXErrorDomain, code: Int(code))])
    }

    /// Removes the state file of `directory`, if any.
    static func remove(from directory: URL) {
        try? FileManager.default.removeItem(at: directory.appendingPathComponent(fileName))
    }
}
