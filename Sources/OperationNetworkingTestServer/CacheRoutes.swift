import Foundation
import NIOCore
import NIOHTTP1

extension TestServerHandler {
    /// `/cache/<name>`: a resource for HTTP cache tests. Its version starts at 1 and goes up with every
    /// request to the path whose method is not GET or HEAD (answered `?status=`, 204 by default, or 500
    /// with `?failUnsafe=1`, with `?location=` and `?contentLocation=`). A GET is answered with the caching fields the query asks
    /// for and the body `"<name> v<version> #<n>"`, n counting the GETs of the path, followed by the
    /// request's value of each field `?vary=` names; or `304 Not Modified` when its `If-None-Match`
    /// matches the entity tag (weakly), or, without one, its `If-Modified-Since` is the `Last-Modified`
    /// (unless `?notModified=0`). `?cookie=` adds that `Set-Cookie` field to a GET's answer.
    /// `?ageFirst=` is the `Age` of the first GET's answer only; `?mismatch304=1` answers every
    /// conditional GET `304` with another entity tag (a `304` about another response);
    /// `?revalidationDelayMs=` holds back the answer to a conditional GET that long.
    func serveCacheResource(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ name: String) {
        let record = request.record
        let conditional = record.header("If-None-Match") != nil || record.header("If-Modified-Since") != nil
        if conditional, let delay = request.uri.int("revalidationDelayMs"), delay > 0 {
            return schedule(context, after: min(delay, 60_000)) {
                self.answerCacheResource(context, request, name)
            }
        }
        answerCacheResource(context, request, name)
    }

    private func answerCacheResource(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ name: String) {
        let query = request.uri.query
        let record = request.record
        let history = state.requests.filter { $0.path == record.path }
        let version = 1 + history.filter { !["GET", "HEAD"].contains($0.method.uppercased()) }.count
        var headers = HTTPHeaders()
        if let location = query["location"] { headers.add(name: "Location", value: headerSafe(location)) }
        if let location = query["contentLocation"] { headers.add(name: "Content-Location", value: headerSafe(location)) }
        let method = record.method.uppercased()
        guard method == "GET" || method == "HEAD" else {
            let failed = query["failUnsafe"] == "1" ? 500 : nil
            let status = failed ?? query["status"].flatMap { integer($0, in: 200...599) } ?? 204
            return respond(context, request, HTTPResponseStatus(statusCode: status), headers: headers)
        }
        let gets = history.filter { $0.method.uppercased() == "GET" }.count
        let tag = entityTag(query["etag"], name: name, version: version)
        let modified = query["lastModified"] == "1" ? lastModifiedDate(version: version) : nil
        addCachingFields(to: &headers, query: query, tag: tag, modified: modified, firstGet: gets == 1)
        if let cookie = query["cookie"] { headers.add(name: "Set-Cookie", value: headerSafe(cookie)) }
        let conditional = record.header("If-None-Match") != nil || record.header("If-Modified-Since") != nil
        if query["mismatch304"] == "1", conditional {
            headers.replaceOrAdd(name: "ETag", value: "\"\(headerSafe(name))-other\"")
            return respond(context, request, .notModified, headers: headers)
        }
        if query["notModified"] != "0", isNotModified(record, tag: tag, modified: modified) {
            return respond(context, request, .notModified, headers: headers)
        }
        let varying = (query["vary"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let values = varying.filter { !$0.isEmpty }.map { " \($0)=\(record.header($0) ?? "-")" }.joined()
        let status = query["status"].flatMap { integer($0, in: 200...599) } ?? 200
        respondText(context, request, HTTPResponseStatus(statusCode: status), "\(name) v\(version) #\(gets)\(values)",
                    headers: headers)
    }

    /// `"<name>-v<version>"`, weak (`W/`) when `kind` is `weak`; none unless `kind` is `strong` or `weak`.
    private func entityTag(_ kind: String?, name: String, version: Int) -> String? {
        let tag = "\"\(headerSafe(name))-v\(version)\""
        switch kind {
        case "strong": return tag
        case "weak": return "W/" + tag
        default: return nil
        }
    }

    /// A fixed moment for version 1, an hour later for each later version.
    private func lastModifiedDate(version: Int) -> String {
        CacheRouteDates.format(Date(timeIntervalSince1970: 1_600_000_000 + Double(version - 1) * 3_600))
    }

    /// `Cache-Control`, `Expires`, `Age` (`ageFirst` on the first GET's answer), `Vary`, `Date` (now
    /// unless `?date=`, none for `?date=none`), `ETag` and `Last-Modified`.
    private func addCachingFields(to headers: inout HTTPHeaders, query: [String: String], tag: String?, modified: String?,
                                  firstGet: Bool) {
        let age = query["age"] ?? (firstGet ? query["ageFirst"] : nil)
        let fields: [(String, String?)] = [("Cache-Control", query["cc"]), ("Expires", query["expires"]),
                                           ("Age", age), ("Vary", query["vary"]), ("ETag", tag),
                                           ("Last-Modified", modified)]
        for case let (name, value?) in fields { headers.add(name: name, value: headerSafe(value)) }
        switch query["date"] {
        case "none": break
        case let date?: headers.add(name: "Date", value: headerSafe(date))
        case nil: headers.add(name: "Date", value: CacheRouteDates.format(Date()))
        }
    }

    /// Whether the request's validators match the representation (RFC 9110 §13.1.2, §13.1.3).
    private func isNotModified(_ record: RecordedRequest, tag: String?, modified: String?) -> Bool {
        if let condition = record.header("If-None-Match") {
            guard let tag else { return false }
            let opaque = { (value: String) in value.hasPrefix("W/") ? String(value.dropFirst(2)) : value }
            return condition.split(separator: ",").contains {
                let member = $0.trimmingCharacters(in: .whitespaces)
                return member == "*" || opaque(member) == opaque(tag)
            }
        }
        guard let since = record.header("If-Modified-Since"), let modified else { return false }
        return since == modified
    }
}

/// IMF-fixdate formatting for the cache route (one formatter, used under its lock).
enum CacheRouteDates {
    private static let lock = NSLock()
    private static let formatter: DateFormatter = {   // only used under `lock`
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }()

    static func format(_ date: Date) -> String {
        lock.withLock { formatter.string(from: date) }
    }
}
