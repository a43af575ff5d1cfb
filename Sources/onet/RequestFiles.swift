import ArgumentParser
import Foundation

/// The files request items name: read as text (`=@`, `:=@`, `:@`, `==@`), as a body (`@file`), or as
/// multipart parts (`name@file`); each error names the item and the file.
enum RequestFiles {
    /// `$HOME`, as httpie reads it (corelibs' `NSHomeDirectory()` asks the password database instead).
    static var homeDirectory: String {
        ProcessInfo.processInfo.environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
    }

    /// `~` and `~/…` expanded to the home directory, as httpie does for item paths.
    static func expanded(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        return homeDirectory + path.dropFirst()
    }

    /// The bytes of the file an item names; a missing or unreadable file is an error naming both.
    static func data(of item: RequestItem, path: String? = nil) throws -> Data {
        let path = path ?? item.value
        let expandedPath = expanded(path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: expandedPath, isDirectory: &isDirectory) else {
            throw ValidationError("'\(item.original)': no such file: '\(path)'")
        }
        guard !isDirectory.boolValue else { throw ValidationError("'\(item.original)': '\(path)' is a directory") }
        guard let data = FileManager.default.contents(atPath: expandedPath) else {
            throw ValidationError("'\(item.original)': cannot read '\(path)' (permission denied?)")
        }
        return data
    }

    /// The UTF-8 text of the file an item names.
    static func text(of item: RequestItem) throws -> String {
        guard let text = String(data: try data(of: item), encoding: .utf8) else {
            throw ValidationError("'\(item.original)': cannot embed the content of '\(item.value)', not a UTF-8 or ASCII-encoded text file")
        }
        return text
    }

    /// A `name@path` or `name@path;type=mime` item as a multipart file part (checked readable now,
    /// streamed from disk when sent).
    static func filePart(of item: RequestItem) throws -> MultipartField {
        let pieces = item.value.components(separatedBy: ";type=")
        let path = pieces[0]
        let expandedPath = expanded(path)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: expandedPath, isDirectory: &isDirectory) else {
            throw ValidationError("'\(item.original)': no such file: '\(path)'")
        }
        guard !isDirectory.boolValue, FileManager.default.isReadableFile(atPath: expandedPath) else {
            throw ValidationError("'\(item.original)': cannot read '\(path)'")
        }
        let given = pieces.count > 1 && !pieces[1].isEmpty ? pieces[1] : nil
        return .file(name: item.key, fileName: (path as NSString).lastPathComponent, path: expandedPath,
                     mimeType: given ?? MIMEType.guess(forPath: path))
    }
}

/// The MIME type of a file name as httpie guesses it (Python's `mimetypes`): the system's
/// `/etc/mime.types` first, a few common types otherwise; a compression suffix (`.gz`) alone says nothing.
enum MIMEType {
    /// Extension (lower case, without the dot) → type, read once.
    private static let table: [String: String] = {
        var table = fallback
        if let text = try? String(contentsOfFile: "/etc/mime.types", encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard let type = words.first else { continue }
                for suffix in words.dropFirst() { table[suffix.lowercased()] = String(type) }
            }
        }
        return table
    }()

    /// Used when the system has no table.
    private static let fallback: [String: String] = [
        "txt": "text/plain", "json": "application/json", "html": "text/html", "htm": "text/html", "css": "text/css",
        "csv": "text/csv", "xml": "application/xml", "js": "text/javascript", "png": "image/png", "jpg": "image/jpeg",
        "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp", "svg": "image/svg+xml", "pdf": "application/pdf",
        "zip": "application/zip", "tar": "application/x-tar", "bin": "application/octet-stream", "mp4": "video/mp4",
    ]

    /// Compression suffixes: the type is that of the name before them.
    private static let encodings: Set<String> = ["gz", "Z", "bz2", "xz", "br"]

    /// The type of `path`'s extension, or `nil` when it has none that is known.
    static func guess(forPath path: String) -> String? {
        var name = (path as NSString).lastPathComponent
        for (short, long) in [(".tgz", ".tar.gz"), (".taz", ".tar.gz"), (".tz", ".tar.gz"), (".tbz2", ".tar.bz2"),
                              (".txz", ".tar.xz"), (".svgz", ".svg.gz")] where name.lowercased().hasSuffix(short) {
            name = String(name.dropLast(short.count)) + long
        }
        var ext = (name as NSString).pathExtension
        if encodings.contains(ext) {   // the encodings are matched case-sensitively, as Python does
            name = (name as NSString).deletingPathExtension
            ext = (name as NSString).pathExtension
        }
        guard !ext.isEmpty else { return nil }
        return table[ext.lowercased()]
    }
}
