import ArgumentParser
import Foundation

/// What `onet request`'s positional words say: the method, the URL and the request items, parsed
/// before anything is sent so that a bad word is a usage error naming it.
struct RequestPlan {
    /// The method, upper-cased; `GET`, or `POST` when the items carry a body, unless one was given.
    var method: String
    /// The URL as typed, with `http://` added when it had no scheme (`:8080/x` means localhost).
    var url: String
    /// `Header:value` items in order; a `nil` value (`Header:`) removes a default header.
    var headers: [(name: String, value: String?)] = []
    /// `name==value` items: query parameters; a repeated name becomes an array (`a[]=1&a[]=2`).
    var query: [String: Any] = [:]
    /// `name=value` (strings) and `name:=json` (any JSON value) items, in the body.
    var fields: [String: Any] = [:]
    /// Whether any `name:=json` item was given (not expressible in a form).
    var hasRawJSON = false
    /// `name@path` items: multipart file parts, streamed from disk.
    var files: [(name: String, path: String)] = []

    /// Whether the items put anything in the body.
    var hasBody: Bool { !fields.isEmpty || !files.isEmpty }

    /// Parses `words` (`[METHOD] URL [items…]`); `form` says whether fields go in a form (`--form`),
    /// where a raw JSON value cannot.
    init(words: [String], form: Bool) throws {
        var rest = words[...]
        guard let first = rest.popFirst() else {
            throw ValidationError("Missing URL: usage is onet request [METHOD] URL [items…].")
        }
        var explicitMethod: String?
        var target = first
        if RequestPlan.looksLikeMethod(first) {
            guard let url = rest.popFirst() else {
                throw ValidationError("Missing URL after the method '\(first)'.")
            }
            explicitMethod = first
            target = url
        }
        url = try RequestPlan.normalisedURL(target)
        method = "GET"
        for word in rest { try add(item: word) }
        if hasRawJSON && !files.isEmpty {
            throw ValidationError("name:=json items cannot go in a multipart form (a name@file item makes one).")
        }
        if hasRawJSON && form {
            throw ValidationError("name:=json items need a JSON body: drop --form.")
        }
        method = explicitMethod ?? (hasBody ? "POST" : "GET")
    }

    /// A method is a token of capital letters (`GET`, `PATCH`, `PROPFIND`): URLs and items never are.
    private static func looksLikeMethod(_ word: String) -> Bool {
        !word.isEmpty && word.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) }
    }

    /// `example.com/x` → `http://example.com/x`; `:8080/x` → `http://localhost:8080/x`. Refuses what
    /// does not parse as an http(s) URL with a host.
    static func normalisedURL(_ text: String) throws -> String {
        var candidate = text
        if candidate.hasPrefix(":") { candidate = "localhost" + candidate }
        if !candidate.contains("://") { candidate = "http://" + candidate }
        guard FetchPlan.httpURL(candidate) != nil else {   // the same rule as onet fetch's URLs
            throw ValidationError("Invalid URL '\(text)': expected http(s)://host[:port]/path.")
        }
        return candidate
    }

    /// The separators of an item, longest first so that `:=` wins over `:` and `==` over `=` at the
    /// same position.
    private static let separators = [":=", "==", "=", "@", ":"]

    /// Adds one item, split at its earliest separator.
    private mutating func add(item: String) throws {
        var best: (separator: String, range: Range<String.Index>)?
        for separator in RequestPlan.separators {
            guard let range = item.range(of: separator) else { continue }
            if best == nil || range.lowerBound < (best?.range.lowerBound ?? item.endIndex) {
                best = (separator, range)
            }
        }
        guard let (separator, range) = best, range.lowerBound > item.startIndex else {
            throw ValidationError("Invalid request item '\(item)': expected Header:value, name=value, name:=json, "
                                  + "name==value or name@file.")
        }
        let name = String(item[..<range.lowerBound])
        let value = String(item[range.upperBound...])
        switch separator {
        case ":":
            headers.append((name, value.isEmpty ? nil : value.trimmingCharacters(in: .whitespaces)))
        case "==":
            switch query[name] {
            case nil: query[name] = value
            case let existing as [String]: query[name] = existing + [value]
            case let existing as String: query[name] = [existing, value]
            default: break
            }
        case "=":
            fields[name] = value
        case ":=":
            guard let data = value.data(using: .utf8),
                  let json = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
                throw ValidationError("Invalid JSON in '\(item)': the value after ':=' must be JSON (e.g. n:=1, tags:='[\"a\"]').")
            }
            fields[name] = json
            hasRawJSON = true
        default:  // "@"
            guard FileManager.default.isReadableFile(atPath: value) else {
                throw ValidationError("Cannot read the file in '\(item)': \(value).")
            }
            files.append((name, value))
        }
    }
}
