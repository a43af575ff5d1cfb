import Foundation

/// Hides the passwords of URLs before they are shown (new, not in AFNetworking). The library's own
/// texts go through it — `curlDescription`, the description of a `ProxySetting` — and so do the error
/// lines of the `onet` tool, so a URL written `scheme://user:password@host` is shown everywhere as
/// `scheme://user:***@host`.
///
/// Not part of the library's public API: the `onet` tool reaches it as
/// `@_spi(Tool) import OperationNetworking`.
/// - Threading: pure functions; call from any thread.
@_spi(Tool) public enum URLRedaction {
    /// What a hidden password is shown as.
    public static let placeholder = "***"

    /// `url` as text with its password (if any) shown as `***`; everything else as it is.
    public static func redactingPassword(of url: URL) -> String {
        guard url.password != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return url.absoluteString
        }
        components.percentEncodedPassword = placeholder
        return components.string ?? redactingPasswords(in: url.absoluteString)
    }

    /// `url` as a span's `url.full` gives it (OpenTelemetry's rule): a user and a password each
    /// replaced by `REDACTED`, the value of every query item too (their names kept), no fragment.
    static func tracedURL(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return "" }
        if components.percentEncodedUser != nil { components.percentEncodedUser = "REDACTED" }
        if components.percentEncodedPassword != nil { components.percentEncodedPassword = "REDACTED" }
        if let query = components.percentEncodedQuery {
            components.percentEncodedQuery = query.split(separator: "&", omittingEmptySubsequences: false).map { item in
                guard let equals = item.firstIndex(of: "=") else { return String(item) }
                return item[..<equals] + "=REDACTED"
            }.joined(separator: "&")
        }
        components.fragment = nil
        return components.string ?? ""
    }

    /// `url` without its user name and password (`url` itself when it has neither), or `nil` when they
    /// cannot be taken out of it.
    static func removingUserInfo(from url: URL) -> URL? {
        guard url.user != nil || url.password != nil else { return url }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        components.percentEncodedUser = nil
        components.percentEncodedPassword = nil
        return components.url
    }

    /// `text` with the password of every URL in it shown as `***`. In each word (a run of characters
    /// other than white space) the user information starts after `://`, or at the word's start for a
    /// URL written without a scheme (`user:password@host/path`), and ends at the word's last `@`; what
    /// follows its first `:` is hidden, unless a `/` comes before that `:` (then the `@` is in a path).
    /// A malformed URL whose password holds `/`, `?`, `#` or quotes is hidden too: the rule errs towards
    /// hiding (`https://host:8080/@name` is shown as `https://host:***@name`).
    public static func redactingPasswords(in text: String) -> String {
        guard text.contains("@") else { return text }
        return mappingWords(of: text, redactingPassword(inWord:))
    }

    /// `text` with each word (a run of characters other than white space) replaced by `transform` of it.
    static func mappingWords(of text: String, _ transform: (String) -> String) -> String {
        var result = ""
        var word = ""
        for character in text {
            if character.isWhitespace {
                result += transform(word)
                result.append(character)
                word = ""
            } else {
                word.append(character)
            }
        }
        return result + transform(word)
    }

    /// One word with the password of its user information hidden, if it has one.
    private static func redactingPassword(inWord word: String) -> String {
        let start = word.range(of: "://").map(\.upperBound) ?? word.startIndex
        guard let at = word[start...].lastIndex(of: "@"),
              let colon = word[start..<at].firstIndex(where: { $0 == ":" || $0 == "/" }), word[colon] == ":" else {
            return word
        }
        return String(word[...colon]) + placeholder + String(word[at...])
    }
}
