import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `--session NAME|PATH`: headers, credentials and cookies kept between runs, in one JSON file per host
/// (`$XDG_CONFIG_HOME/onet/sessions/<host>_<port>/<name>.json`, else `~/.config/onet/…`), the layout
/// of httpie's session files. During the run the cookies live in the process's `HTTPCookieStorage`,
/// where the library reads and stores them; the file gets what the storage holds at the end.
struct RequestSession {
    /// The file's content.
    struct Stored: Codable {
        /// Custom headers sent again on each run.
        var headers: [Header] = []
        /// The credentials given once, used on later runs.
        var auth: Auth?
        /// The cookies.
        var cookies: [Cookie] = []

        struct Header: Codable {
            var name: String
            var value: String
        }

        struct Auth: Codable {
            /// `basic`, `digest` or `bearer`.
            var type: String?
            /// `user:password`, or the token.
            var rawAuth: String?

            enum CodingKeys: String, CodingKey {
                case type
                case rawAuth = "raw_auth"
            }
        }

        struct Cookie: Codable {
            var name: String
            var value: String
            var domain: String
            var path: String
            var secure: Bool
            /// Seconds since 1970, `nil` for a cookie that ends with the session.
            var expires: Double?
        }
    }

    /// Header names never kept (they describe one request's body or conditions).
    private static let ignoredPrefixes = ["content-", "if-"]

    /// Where the file is.
    let file: URL
    /// `--session-read-only`: the file is read, never written (unless it is new).
    let readOnly: Bool
    /// Whether the file existed before this run.
    let existed: Bool
    /// What the file holds (updated by this run).
    var stored: Stored

    /// The session `name` (a name, or a path when it holds a `/`) for requests to `url`.
    init(name: String, url: URL, hostHeader: String?, readOnly: Bool) throws {
        if name.contains("/") {
            file = URL(fileURLWithPath: RequestFiles.expanded(name))
        } else {
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_.-".contains($0)) }) else {
                throw ValidationError("--session: the name '\(name)' may hold only letters, digits, '_', '.' and '-' (or be a path)")
            }
            file = RequestSession.directory().appendingPathComponent("sessions")
                .appendingPathComponent(RequestURL.sessionFolder(for: url, hostHeader: hostHeader))
                .appendingPathComponent(name + ".json")
        }
        self.readOnly = readOnly
        existed = FileManager.default.fileExists(atPath: file.path)
        guard existed else {
            stored = Stored()
            return
        }
        do {
            stored = try JSONDecoder().decode(Stored.self, from: Data(contentsOf: file))
        } catch {
            throw ValidationError("--session: cannot read '\(file.path)': \(FetchPlan.reason(error))")
        }
    }

    /// onet's configuration folder: `$XDG_CONFIG_HOME/onet`, else `~/.config/onet`.
    static func directory() -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let base = environment["XDG_CONFIG_HOME"], base.hasPrefix("/") {
            return URL(fileURLWithPath: base).appendingPathComponent("onet")
        }
        return URL(fileURLWithPath: RequestFiles.homeDirectory).appendingPathComponent(".config/onet")
    }

    /// The kept headers, sent before the items' own.
    var headers: HeaderFields {
        var fields = HeaderFields()
        for header in stored.headers { fields.set(header.name, header.value) }
        return fields
    }

    /// Puts the kept cookies (unexpired) into `storage`, for requests to `url`.
    func installCookies(in storage: HTTPCookieStorage, for url: URL) {
        let now = Date().timeIntervalSince1970
        for cookie in stored.cookies where cookie.expires.map({ $0 > now }) ?? true {
            var properties: [HTTPCookiePropertyKey: Any] = [
                .name: cookie.name, .value: cookie.value, .path: cookie.path.isEmpty ? "/" : cookie.path,
                .domain: cookie.domain.isEmpty ? (url.host ?? "") : cookie.domain,
            ]
            if cookie.secure { properties[.secure] = "TRUE" }
            if let expires = cookie.expires { properties[.expires] = Date(timeIntervalSince1970: expires) }
            if let made = HTTPCookie(properties: properties) { storage.setCookie(made) }
        }
    }

    /// Keeps this run's headers (not the ones about a body or a condition, not a removal), and a
    /// `Cookie` header's cookies as cookies; returns the headers without `Cookie` (its cookies go
    /// through the storage instead).
    mutating func keep(_ headers: HeaderFields, storage: HTTPCookieStorage, url: URL) -> HeaderFields {
        var remaining = HeaderFields()
        var kept = self.headers
        for (name, value) in headers.fields {
            guard let value else {
                remaining.add(name, nil)
                continue
            }
            let lowered = name.lowercased()
            if lowered == "cookie" {
                for pair in value.components(separatedBy: ";") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard parts.count == 2, let cookie = HTTPCookie(properties: [
                        .name: parts[0], .value: parts[1], .path: "/", .domain: url.host ?? "",
                    ]) else { continue }
                    storage.setCookie(cookie)
                }
                continue
            }
            remaining.add(name, value)
            if !RequestSession.ignoredPrefixes.contains(where: { lowered.hasPrefix($0) }) { kept.set(name, value) }
        }
        stored.headers = kept.fields.compactMap { field in field.value.map { Stored.Header(name: field.name, value: $0) } }
        return remaining
    }

    /// Writes the file (owner-only: it may hold a password) with the cookies `storage` holds now,
    /// unless the session is read-only and existed. Throws a message naming the file.
    mutating func save(cookiesFrom storage: HTTPCookieStorage) throws {
        guard !(readOnly && existed) else { return }
        let now = Date()
        stored.cookies = (storage.cookies ?? []).filter { $0.expiresDate.map { $0 > now } ?? true }.map { cookie in
            Stored.Cookie(name: cookie.name, value: cookie.value, domain: cookie.domain, path: cookie.path,
                          secure: cookie.isSecure, expires: cookie.expiresDate?.timeIntervalSince1970)
        }.sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let data = try encoder.encode(stored)
            guard FileManager.default.createFile(atPath: file.path, contents: data, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteNoPermission)
            }
        } catch {
            throw RequestFailure(status: 1, message: "--session: cannot write '\(file.path)': \(FetchPlan.reason(error))")
        }
    }
}

/// The process's cookie storage is persistent in corelibs (`~/.local/share/onet/.cookies.shared`); an
/// httpie user expects a request without `--session` to keep no cookie. A run takes the storage over:
/// it starts empty (or with the session's cookies) and gets back what it held before at the end.
final class CookieStorageLease {
    private let storage: HTTPCookieStorage
    private let saved: [HTTPCookie]

    /// Empties `storage`, keeping its cookies for `restore()`.
    init(_ storage: HTTPCookieStorage) {
        self.storage = storage
        saved = storage.cookies ?? []
        for cookie in saved { storage.deleteCookie(cookie) }
    }

    /// Removes this run's cookies and puts the earlier ones back.
    func restore() {
        for cookie in storage.cookies ?? [] { storage.deleteCookie(cookie) }
        for cookie in saved { storage.setCookie(cookie) }
    }
}

/// A failure of `onet request` after the words parsed: one line on standard error, this exit status.
struct RequestFailure: Error {
    /// httpie's exit status: 1 for a transport error, 2 for a timeout, 3/4/5 for `--check-status`, 6
    /// for too many redirects.
    let status: Int32
    /// The line's text (without the `onet: error: ` prefix).
    let message: String
}
