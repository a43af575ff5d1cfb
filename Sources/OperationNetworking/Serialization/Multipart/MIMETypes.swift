/// MIME types by file extension, for file parts (Linux has no UTI database to ask).
/// - Threading: immutable.
enum MIMETypes {
    private static let table: [String: String] = [
        "txt": "text/plain", "text": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css",
        "csv": "text/csv", "xml": "application/xml", "json": "application/json", "js": "text/javascript",
        "md": "text/markdown", "yaml": "application/yaml", "yml": "application/yaml",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "bmp": "image/bmp",
        "webp": "image/webp", "tif": "image/tiff", "tiff": "image/tiff", "ico": "image/x-icon", "svg": "image/svg+xml",
        "heic": "image/heic", "pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip",
        "tar": "application/x-tar", "bz2": "application/x-bzip2", "xz": "application/x-xz", "7z": "application/x-7z-compressed",
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "wav": "audio/wav", "ogg": "audio/ogg", "flac": "audio/flac",
        "mp4": "video/mp4", "m4v": "video/x-m4v", "mov": "video/quicktime", "webm": "video/webm", "avi": "video/x-msvideo",
        "plist": "application/x-plist", "cer": "application/x-x509-ca-cert", "crt": "application/x-x509-ca-cert",
        "der": "application/x-x509-ca-cert", "pem": "application/x-pem-file", "doc": "application/msword",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint", "wasm": "application/wasm", "bin": "application/octet-stream",
    ]

    /// The MIME type for an extension (case-insensitive), `application/octet-stream` when unknown.
    static func type(forExtension fileExtension: String) -> String {
        table[fileExtension.lowercased()] ?? "application/octet-stream"
    }
}
