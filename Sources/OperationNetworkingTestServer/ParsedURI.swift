import Foundation

/// A request target split into path and query, parsed leniently: the input comes from the
/// network, so any malformed part degrades to its raw text instead of failing.
struct ParsedURI: Sendable {
    /// Everything before `?` (origin-form path), not percent-decoded.
    let path: String
    /// The text after `?`, undecoded, or `nil` when the target had no `?`.
    let rawQuery: String?
    /// Query items in the order they appeared, percent-decoded.
    let items: [(name: String, value: String)]

    /// The query as a dictionary; a repeated name keeps its last value.
    var query: [String: String] {
        var result: [String: String] = [:]
        for item in items { result[item.name] = item.value }
        return result
    }

    init(_ uri: String) {
        var target = Substring(uri)
        // Fragments are never sent by well-behaved clients; drop one if a client does anyway.
        if let hash = target.firstIndex(of: "#") { target = target[..<hash] }
        // Absolute-form ("http://host/path") is what proxies receive; reduce it to origin-form.
        if let schemeEnd = target.range(of: "://"), target.hasPrefix("http") {
            let afterAuthority = target[schemeEnd.upperBound...]
            target = afterAuthority.firstIndex(of: "/").map { afterAuthority[$0...] } ?? "/"
        }
        if let mark = target.firstIndex(of: "?") {
            path = String(target[..<mark])
            let query = String(target[target.index(after: mark)...])
            rawQuery = query
            items = ParsedURI.parseQuery(query)
        } else {
            path = String(target)
            rawQuery = nil
            items = []
        }
    }

    /// Splits `a=1&b=2`; `+` stays literal (as Foundation's URLComponents does), so what a client
    /// built with URLQueryItem round-trips unchanged.
    private static func parseQuery(_ query: String) -> [(name: String, value: String)] {
        query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            if let equals = pair.firstIndex(of: "=") {
                return (decode(pair[..<equals]), decode(pair[pair.index(after: equals)...]))
            }
            return (decode(pair), "")
        }
    }

    /// Percent-decodes, falling back to the raw text for invalid escapes such as `%zz`.
    private static func decode(_ text: Substring) -> String {
        let raw = String(text)
        return raw.removingPercentEncoding ?? raw
    }

    /// The query item `name`'s value parsed as an integer, or `nil` if absent or not a number.
    func int(_ name: String) -> Int? {
        query[name].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }
}
