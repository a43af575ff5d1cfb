import ArgumentParser
import Foundation

/// How `onet request` sends fields: httpie's `--json` (the default), `--form` or `--multipart`.
enum RequestType {
    case json, form, multipart
}

/// What the body of the request is.
enum RequestBody {
    /// No body.
    case none
    /// These bytes (a JSON or form body, `--raw`, standard input, an `@file`).
    case bytes(Data)
    /// A multipart form of these parts (the library's builder, its random boundary).
    case multipart([MultipartField])
}

/// The request httpie would send for the same words: method, URL, headers and body, worked out before
/// anything is sent, so that a bad word is an error naming it.
struct RequestPlan {
    /// The JSON defaults httpie sends with a JSON body.
    static let jsonAccept = "application/json, */*;q=0.5"
    static let jsonContentType = "application/json"
    static let formContentType = "application/x-www-form-urlencoded; charset=utf-8"

    /// The method, upper-cased.
    var method: String
    /// The URL, without user information.
    var url: URL
    /// httpie's default headers for this request (JSON's or the form's).
    var defaultHeaders = HeaderFields()
    /// A session's kept headers (set by the caller once the session is found).
    var sessionHeaders = HeaderFields()
    /// The items' headers.
    var itemHeaders = HeaderFields()

    /// The headers the request carries beyond the transport's own, in order (a session's over the
    /// defaults, the items' over both); a `nil` value removes a default.
    var headers: HeaderFields {
        var fields = defaultHeaders
        fields.update(with: sessionHeaders)
        fields.update(with: itemHeaders)
        return fields
    }
    /// The body.
    var body = RequestBody.none
    /// A user and password written in the URL (sent as Basic credentials).
    var urlCredentials: (user: String, password: String)?

    /// What the words and options give; `stdin` is read only when it is the body (not a terminal and
    /// not `--ignore-stdin`, the caller decides), `raw` is `--raw`'s text.
    init(words: [String], type: RequestType?, stdin: Data?, raw: String?, defaultScheme: String) throws {
        let (explicitMethod, target, items) = try RequestPlan.positionals(words)
        let hasInput = stdin != nil || raw != nil
        method = explicitMethod ?? (hasInput || items.contains { $0.kind.isData } ? "POST" : "GET")
        let isForm = type == .form || type == .multipart
        let content = try ItemContent(items: items, form: isForm)
        var data: RequestBody = .none
        var hasData = isForm ? !content.form.isEmpty : content.json != nil
        if isForm {
            if !content.form.isEmpty { data = .bytes(Data(RequestURL.formEncoded(content.form).utf8)) }
        } else if let json = content.json {
            data = .bytes(Data(json.httpieText.utf8))
        }
        var itemHeaders = content.headers
        if !isForm, !content.files.isEmpty {
            data = try RequestPlan.fileBody(content, hasData: hasData, headers: &itemHeaders)
            hasData = true
        }
        let resolved = try RequestURL.resolve(target, query: content.query, defaultScheme: defaultScheme)
        url = resolved.url
        if let user = resolved.user {
            urlCredentials = (user.removingPercentEncoding ?? user, (resolved.password ?? "").removingPercentEncoding ?? "")
        }
        if let input = raw.map({ Data($0.utf8) }) ?? stdin {
            guard stdin == nil || raw == nil, !hasData, (isForm ? content.files.isEmpty : true) else {
                throw ValidationError("Request body (from stdin, --raw or a file) and request data (key=value) cannot be mixed. "
                                      + "Pass --ignore-stdin to let key/value take priority.")
            }
            data = .bytes(input)
            hasData = true
        }
        defaultHeaders = RequestPlan.defaultHeaders(type: type, hasData: hasData, hasFiles: isForm && !content.files.isEmpty)
        self.itemHeaders = itemHeaders
        body = (isForm && !content.files.isEmpty) || type == .multipart ? .multipart(content.multipart) : data
    }

    /// `[METHOD] URL [items…]` as httpie tells them apart: with two words or more, a first word of
    /// letters only is the method (upper-cased), otherwise it is the URL and the rest are items.
    private static func positionals(_ words: [String]) throws -> (method: String?, url: String, items: [RequestItem]) {
        var rest = words[...]
        guard let first = rest.popFirst() else {
            throw ValidationError("Missing URL: usage is onet request [METHOD] URL [REQUEST_ITEM …].")
        }
        var method: String?
        var target = first
        if let second = rest.first, first.allSatisfy({ $0.isASCII && $0.isLetter }) {
            method = first.uppercased()
            target = second
            rest = rest.dropFirst()
        }
        let items = try rest.map { word in
            guard let item = RequestItem.parse(word) else { throw ValidationError("'\(word)' is not a valid request item") }
            return item
        }
        return (method, target, items)
    }

    /// `@file` without `--form`: the file is the body, typed from its name unless a header types it.
    private static func fileBody(_ content: ItemContent, hasData: Bool, headers: inout HeaderFields) throws -> RequestBody {
        for case .file(let name, _, _, _) in content.files where !name.isEmpty {
            let names = content.files.map(\.name).joined(separator: ",")
            throw ValidationError("Invalid file fields (perhaps you meant --form?): \(names)")
        }
        guard content.files.count == 1, case .file(_, let fileName, let path, let mimeType) = content.files[0] else {
            throw ValidationError("Can't read request from multiple files")
        }
        guard !hasData else {
            throw ValidationError("Request body (from stdin, --raw or a file) and request data (key=value) cannot be mixed.")
        }
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw ValidationError("'@\(fileName)': cannot read '\(path)'")
        }
        if !headers.contains("Content-Type"), let mimeType { headers.add("Content-Type", mimeType) }
        return .bytes(bytes)
    }

    /// httpie's defaults: JSON's `Accept` and `Content-Type` when the body is JSON (or `--json`), the
    /// form's `Content-Type` with `--form` (a multipart form types itself).
    private static func defaultHeaders(type: RequestType?, hasData: Bool, hasFiles: Bool) -> HeaderFields {
        var headers = HeaderFields()
        let isForm = type == .form || type == .multipart
        if type == .json || (hasData && !isForm) {
            headers.add("Accept", jsonAccept)
            headers.add("Content-Type", jsonContentType)
        } else if isForm && !hasFiles {
            headers.add("Content-Type", formContentType)
        }
        return headers
    }

    /// Whether the body is empty where `requests` still says `Content-Length: 0` (every method but
    /// GET and HEAD; httpie takes it off OPTIONS).
    var sendsZeroLength: Bool {
        if case .none = body, !["GET", "HEAD", "OPTIONS"].contains(method) { return true }
        if case .bytes(let data) = body, data.isEmpty, !["GET", "HEAD", "OPTIONS"].contains(method) { return true }
        return false
    }
}
