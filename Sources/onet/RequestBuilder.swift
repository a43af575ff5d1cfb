import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// The request as the library sends it, and its head as shown.
struct BuiltRequest {
    /// What the operation is made with.
    var request: URLRequest
    /// The first hop as it goes on the wire.
    var shown: SentRequest
    /// `--download --continue`: the bytes already in the file (0: none, no Range sent).
    var resumeOffset: Int64 = 0
}

/// Builds the `URLRequest` from the plan through the library's request serializer (its User-Agent,
/// its multipart builder that streams files from disk), with httpie's default headers: `Accept-Encoding:
/// gzip, deflate`, `Accept: */*`, `Connection: keep-alive`, and JSON's or the form's when they apply.
struct RequestBuilder {
    let options: Request
    let plan: RequestPlan
    let storage: HTTPCookieStorage

    /// The request with `headers` (the plan's, after the session took its cookies out) and the credentials.
    func build(headers: HeaderFields, authentication: RequestRun.Authentication) throws -> BuiltRequest {
        var (request, body, bodyNote) = try baseRequest()
        var fields = defaultFields(request, headers: headers)
        if case .header(let value) = authentication { fields.put("Authorization", value) }
        var resumeOffset: Int64 = 0
        if options.download {
            fields.put("Accept-Encoding", "identity")   // a file must be the bytes as stored, resumable
            if options.continueDownload, let output = options.output {
                resumeOffset = DownloadNaming.existingSize(output)
                if resumeOffset > 0 { fields.put("Range", "bytes=\(resumeOffset)-") }
            }
        }
        if options.compress > 0, let original = body, let deflated = BodyCompression.deflated(original),
           deflated.count < original.count || options.compress > 1 {
            request.httpBody = deflated
            body = deflated
            fields.put("Content-Encoding", "deflate")
        }
        if plan.sendsZeroLength, body == nil, bodyNote == nil, fields.value("Content-Length") == nil {
            fields.put("Content-Length", "0")
        }
        if case .multipart = plan.body, let length = request.value(forHTTPHeaderField: "Content-Length") {
            fields.put("Content-Length", length)
        }
        for name in Array((request.allHTTPHeaderFields ?? [:]).keys) { request.setValue(nil, forHTTPHeaderField: name) }
        for (name, value) in fields.fields { request.setValue(value, forHTTPHeaderField: name) }
        request.httpShouldHandleCookies = true
        let shown = SentRequest(method: plan.method, url: plan.url,
                                headers: RequestBuilder.wireHeaders(of: request, body: body, storage: storage),
                                body: body, bodyNote: bodyNote)
        return BuiltRequest(request: request, shown: shown, resumeOffset: resumeOffset)
    }

    /// The serializer's request for the plan's method, URL and body; the body's bytes (`nil` for none or
    /// a streamed multipart body) and, for the latter, a note to show in its place.
    private func baseRequest() throws -> (URLRequest, Data?, String?) {
        let serializer = HTTPRequestSerializer()
        serializer.setValue(nil, forHTTPHeaderField: "Accept-Language")   // httpie sends none
        if let timeout = options.timeout { serializer.timeoutInterval = timeout }
        let url = plan.url.absoluteString
        do {
            switch plan.body {
            case .multipart(let parts):
                let request = try serializer.multipartFormRequest(method: plan.method, urlString: url, parameters: nil) { form in
                    for part in parts {
                        switch part {
                        case .text(let name, let value): form.appendPart(withFormData: Data(value.utf8), name: name)
                        case .file(let name, let fileName, let path, let mimeType):
                            try form.appendPart(withFileURL: URL(fileURLWithPath: path), name: name, fileName: fileName,
                                                mimeType: mimeType ?? "application/octet-stream")
                        }
                    }
                }
                let length = request.value(forHTTPHeaderField: "Content-Length") ?? "?"
                return (request, nil, "(multipart body, \(length) bytes, streamed from its parts)")
            case .bytes(let data):
                var request = try serializer.request(method: plan.method, urlString: url, parameters: nil)
                // The serializer gives a body method an empty form; the plan says what the body is.
                request.httpBody = data.isEmpty ? nil : data
                return (request, request.httpBody, nil)
            case .none:
                var request = try serializer.request(method: plan.method, urlString: url, parameters: nil)
                request.httpBody = nil
                return (request, nil, nil)
            }
        } catch {
            throw RequestFailure(status: 1, message: ResponsePrinter.describe(error as NSError))
        }
    }

    /// httpie's defaults (`Accept-Encoding: gzip, deflate`, `Accept: */*`, `Connection: keep-alive`), the
    /// library's User-Agent, then `headers`; a multipart body's type with its boundary.
    private func defaultFields(_ request: URLRequest, headers: HeaderFields) -> FieldList {
        var fields = FieldList()
        fields.put("User-Agent", request.value(forHTTPHeaderField: "User-Agent"))
        fields.put("Accept-Encoding", "gzip, deflate")
        fields.put("Accept", "*/*")
        fields.put("Connection", "keep-alive")
        for (name, value) in headers.fields { fields.apply(name, value?.trimmingCharacters(in: .whitespaces)) }
        if case .multipart = plan.body, let multipartType = request.value(forHTTPHeaderField: "Content-Type") {
            // The items' own type keeps its place, with the body's boundary; otherwise the body's type.
            let boundary = multipartType.components(separatedBy: "boundary=").last ?? ""
            if let given = plan.itemHeaders.value("Content-Type")?.trimmingCharacters(in: .whitespaces) {
                fields.put("Content-Type", given.contains("boundary=") ? given : "\(given); boundary=\(boundary)")
            } else {
                fields.put("Content-Type", multipartType)
            }
        }
        return fields
    }

    /// The head the transport sends for `request`: its fields in order, with what libcurl and the
    /// library add — `Host`, `Content-Length` of a body, the stored cookies for the URL (unless the
    /// request has its own `Cookie`) — and `extra` (a challenge's `Authorization`).
    static func wireHeaders(of request: URLRequest, body: Data?, storage: HTTPCookieStorage,
                            extra: [(String, String)] = []) -> [(name: String, value: String)] {
        var fields = FieldList()
        for (name, value) in orderedFields(of: request) { fields.put(name, value) }
        for (name, value) in extra { fields.put(name, value) }
        if let body, fields.value("Content-Length") == nil { fields.put("Content-Length", String(body.count)) }
        if let url = request.url {
            if request.httpShouldHandleCookies, fields.value("Cookie") == nil, let line = cookieLine(in: storage, for: url) {
                fields.put("Cookie", line)
            }
            if fields.value("Host") == nil, let host = url.host {
                let isDefault = url.port == nil || url.port == (url.scheme?.lowercased() == "https" ? 443 : 80)
                let shownHost = host.contains(":") ? "[\(host)]" : host
                fields.put("Host", isDefault ? shownHost : "\(shownHost):\(url.port ?? 0)")
            }
        }
        return fields.fields
    }

    /// The request's fields, the ones httpie sends first in httpie's order, the rest by name.
    private static func orderedFields(of request: URLRequest) -> [(String, String)] {
        let first = ["User-Agent", "Accept-Encoding", "Accept", "Connection"]
        let all = request.allHTTPHeaderFields ?? [:]
        var result: [(String, String)] = []
        for name in first {
            if let entry = all.first(where: { $0.key.lowercased() == name.lowercased() }) { result.append((entry.key, entry.value)) }
        }
        let rest = all.filter { entry in !first.contains { $0.lowercased() == entry.key.lowercased() } }
        return result + rest.sorted { $0.key.lowercased() < $1.key.lowercased() }.map { ($0.key, $0.value) }
    }

    /// The `Cookie` value the library sends to `url` from `storage`: the cookies whose domain, path,
    /// `Secure` flag and expiry let them go (RFC 6265 §5.4), in the storage's order.
    static func cookieLine(in storage: HTTPCookieStorage, for url: URL) -> String? {
        let https = url.scheme?.lowercased() == "https"
        let path = url.path.isEmpty ? "/" : url.path
        let now = Date()
        let cookies = (storage.cookies(for: url) ?? []).filter { cookie in
            if cookie.isSecure && !https { return false }
            if let expiry = cookie.expiresDate, expiry <= now { return false }
            let cookiePath = cookie.path.isEmpty ? "/" : cookie.path
            return path == cookiePath || (path.hasPrefix(cookiePath) && (cookiePath.hasSuffix("/")
                || path.dropFirst(cookiePath.count).first == "/"))
        }
        return cookies.isEmpty ? nil : HTTPCookie.requestHeaderFields(with: cookies)["Cookie"]
    }
}

/// Header fields by name (compared case-insensitively), in order; a repeated name is one field whose
/// values are joined with ", " (a `URLRequest` holds one value per name).
struct FieldList {
    private(set) var fields: [(name: String, value: String)] = []
    private var explicitlySet = Set<String>()

    /// Sets `name` to `value` (replacing it); `nil` removes it.
    mutating func put(_ name: String, _ value: String?) {
        let lowered = name.lowercased()
        if let index = fields.firstIndex(where: { $0.name.lowercased() == lowered }) {
            if let value { fields[index] = (name, value) } else { fields.remove(at: index) }
        } else if let value {
            fields.append((name, value))
        }
    }

    /// An item's header: the first value replaces a default, a later one is added to it; `nil`
    /// (`Header:`) removes the default — except those the transport sends anyway, which fall back to
    /// what says the same as none (`Accept: */*`, `Accept-Encoding: identity`).
    mutating func apply(_ name: String, _ value: String?) {
        let lowered = name.lowercased()
        guard let value else {
            explicitlySet.remove(lowered)
            switch lowered {
            case "accept": put(name, "*/*")
            case "accept-encoding": put(name, "identity")
            default: put(name, nil)
            }
            return
        }
        if explicitlySet.contains(lowered), let existing = self.value(name) {
            put(name, existing + ", " + value)
        } else {
            put(name, value)
            explicitlySet.insert(lowered)
        }
    }

    /// The value of `name`.
    func value(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
