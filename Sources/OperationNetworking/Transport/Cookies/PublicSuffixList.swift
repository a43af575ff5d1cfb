import CPsl

/// Public suffixes (`com`, `co.uk`, `github.io`) and IP literals, for cookie scoping (RFC 6265 §5.3
/// steps 5 and 6): a cookie may name neither as a domain it is shared across.
///
/// The list is libpsl's (the library libcurl links): `psl_latest` picks the newer of the copy built
/// into libpsl and the system's (`/usr/share/publicsuffix`, Debian's `publicsuffix` package). The
/// list's implicit `*` rule counts too, so every single-label name (`test`, `localhost`, an unknown
/// top-level domain) is a public suffix. Without any list every domain is taken for one: no cookie
/// is then shared beyond the host that set it.
/// - Threading: the list is loaded once and only read after; any thread.
enum PublicSuffixList {
    /// libpsl's context, never freed: it lives as long as the process.
    private final class Context: @unchecked Sendable {   // set once at init, only read by libpsl after
        let raw: OpaquePointer?

        init() {
            raw = psl_latest(nil) ?? psl_builtin()
        }
    }

    private static let context = Context()

    /// Whether `domain` (lower case, no leading dot) is a public suffix: on the list, under one of
    /// its wildcard rules, or a single label.
    static func isPublicSuffix(_ domain: String) -> Bool {
        guard domain.utf8.contains(UInt8(ascii: ".")), let raw = context.raw else { return true }
        return psl_is_public_suffix2(raw, domain, Int32(PSL_TYPE_ANY)) != 0
    }

    /// Whether `host` is an IP address rather than a name: an IPv6 literal (with or without its
    /// brackets), or a host whose last label is a number, as URL parsers read IPv4 (`127.1`,
    /// `0x7f.1` and `2130706433` all reach 127.0.0.1).
    static func isIPAddress(_ host: String) -> Bool {
        if host.utf8.contains(UInt8(ascii: ":")) { return true }   // only IPv6 literals have colons
        var label = Substring(host)
        if label.hasSuffix(".") { label = label.dropLast() }
        if let dot = label.lastIndex(of: ".") { label = label[label.index(after: dot)...] }
        guard !label.isEmpty else { return false }
        if label.allSatisfy({ $0.isASCII && $0.isNumber }) { return true }
        let lowered = label.lowercased()
        return lowered.hasPrefix("0x") && lowered.dropFirst(2).allSatisfy { $0.isHexDigit && $0.isASCII }
    }
}
