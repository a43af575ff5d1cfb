import Foundation

extension URL {
    /// The URL as an archive keeps it: the absolute string without a user name or password. An archive
    /// outlives the process and lands on disk, so a password written in the URL (`https://user:pw@host/`)
    /// must not go with it; the restored URL works without it, and the app sets its credential again.
    ///
    /// `URLComponents` takes the user information out; for the rare URL it cannot take apart, the
    /// authority's `user:password@` prefix is cut from the text instead, so the result never carries it.
    /// (Public to the tool: `onet fetch`'s state file keeps its URLs the same way.)
    @_spi(Tool) public var archivedString: String {
        if let bare = URLRedaction.removingUserInfo(from: self) { return bare.absoluteString }
        return URL.removingUserInfo(fromText: absoluteString)
    }

    /// `text` (an absolute URL) with everything between `scheme://` and the authority's last `@` cut out.
    /// The authority ends at the first `/`, `?` or `#` after `://`; user information cannot hold those
    /// unescaped, and an `@` after them belongs to the path, query or fragment.
    static func removingUserInfo(fromText text: String) -> String {
        guard let schemeEnd = text.range(of: "://")?.upperBound else { return text }
        let authorityEnd = text[schemeEnd...].firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? text.endIndex
        guard let at = text[schemeEnd..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<schemeEnd]) + String(text[text.index(after: at)...])
    }

    /// `text` with the user information of every `scheme://` URL in it cut out, word by word (a word is
    /// a run of characters other than white space). An archived error description goes through it: a
    /// library message may name a URL (the proxy's, for one) as it was written, password and all.
    static func removingUserInfo(inText text: String) -> String {
        guard text.contains("@") else { return text }
        return URLRedaction.mappingWords(of: text, removingUserInfo(fromText:))
    }
}
