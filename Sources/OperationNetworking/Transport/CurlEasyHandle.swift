import CCurl
import CCurlShim
import Foundation

/// Owns one libcurl easy handle and the header list attached to it.
///
/// Options are set through the typed wrappers of `CCurlShim`; a refused option throws a `URLError`
/// (never a crash), which becomes the operation's error.
/// - Threading: not `Sendable`. Built and configured on the network thread and used only there.
final class CurlEasyHandle {
    /// The raw `CURL *`; valid until `deinit`.
    let raw: UnsafeMutableRawPointer
    /// Header list handed to `CURLOPT_HTTPHEADER`; curl keeps pointing at it, so it lives as long as the handle.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// The lines behind `headerList`, so an unchanged list is not rebuilt.
    private var headerLines: [String] = []
    /// curl writes its detailed message for a failure here (`CURLOPT_ERRORBUFFER`).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// Where the response header lines of the handle's transfers are kept (`CURLOPT_HEADERDATA`); its
    /// `owner` is the transfer on the handle. Freed in `deinit`.
    let headerBlock: UnsafeMutablePointer<ccurl_header_block>
    /// What every per-transfer callback is given as its data: the header block (see CurlCallbacks.swift).
    var callbackData: UnsafeMutableRawPointer { UnsafeMutableRawPointer(headerBlock) }
    /// Whether options were set since the last `reset()` (the configuring code says so).
    var isConfigured = false
    /// The kind of plain request the handle is configured for, when it is one: a transfer of the same
    /// kind only changes what differs (URL, callback data, headers) instead of resetting every option.
    var plainConfiguration: PlainConfiguration?
    /// What `primaryAddress()` last returned.
    private var lastPrimaryAddress: String?

    /// Easy handles alive in the process (tests check that none leak); guarded by `countLock`.
    nonisolated(unsafe) private static var live = 0
    private static let countLock = NSLock()
    static var liveCount: Int { countLock.withLock { live } }

    /// A new handle; `share`, when given, is attached for the handle's whole life (`reset` keeps it).
    /// `clock`, the network thread's, stamps the activity of header lines (`nil`: read per line).
    init?(share: UnsafeMutableRawPointer? = nil, clock: UnsafePointer<UInt64>? = nil) {
        guard let block = ccurl_header_block_create(Transfer.maxHeaderBytes, clock, curlHeaderEvent) else { return nil }
        guard let handle = curl_easy_init() else {
            ccurl_header_block_destroy(block)
            return nil
        }
        if let share { _ = ccurl_easy_setopt_ptr(handle, CURLOPT_SHARE, share) }
        headerBlock = block
        CurlEasyHandle.countLock.withLock { CurlEasyHandle.live += 1 }
        raw = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        CurlEasyHandle.countLock.withLock { CurlEasyHandle.live -= 1 }
        curl_easy_cleanup(raw)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
        ccurl_header_block_destroy(headerBlock)
    }

    /// Clears every option (keeps the handle's caches), so the handle can serve the next hop or request.
    func reset() {
        curl_easy_reset(raw)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        headerLines = []
        errorBuffer[0] = 0
        isConfigured = false
        plainConfiguration = nil
    }

    /// Readies a handle kept configured for the next transfer of the same kind.
    func clearError() {
        errorBuffer[0] = 0
    }

    /// curl's message for the last failure, if it wrote one.
    var errorMessage: String? {
        let message = String(cString: errorBuffer)
        return message.isEmpty ? nil : message
    }

    // MARK: - Options

    func set(_ option: CURLoption, _ value: Int) throws {
        try check(ccurl_easy_setopt_long(raw, option, value), option)
    }

    func set(_ option: CURLoption, _ value: Bool) throws {
        try check(ccurl_easy_setopt_long(raw, option, value ? 1 : 0), option)
    }

    func set(_ option: CURLoption, offset value: Int64) throws {
        try check(ccurl_easy_setopt_off_t(raw, option, curl_off_t(value)), option)
    }

    /// String options are copied by libcurl, so the Swift string need not outlive the call. Through
    /// `withCString`, which lends a native string's own NUL-terminated bytes: passing the `String` as
    /// the pointer argument copies them into a new array first (an allocation per request for the URL).
    func set(_ option: CURLoption, _ value: String) throws {
        try check(value.withCString { ccurl_easy_setopt_str(raw, option, $0) }, option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws {
        try check(ccurl_easy_setopt_ptr(raw, option, value), option)
    }

    /// Replaces the request header list (`"Name: value"` lines; `"Name:"` removes a header curl would add),
    /// unless the list already holds the same bytes. Compared as bytes: `String`'s `==` takes canonically
    /// equivalent spellings (a precomposed and a decomposed é) as equal, and kept the last request's.
    func setHeaders(_ lines: [String]) throws {
        if headerList != nil && CurlEasyHandle.sameBytes(lines, headerLines) { return }
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            guard let appended = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw TransportError.make(.unknown, "libcurl could not store a request header", url: nil)
            }
            list = appended
        }
        try check(ccurl_easy_setopt_slist(raw, CURLOPT_HTTPHEADER, list), CURLOPT_HTTPHEADER)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = list
        headerLines = lines
    }

    /// Whether two lists of lines are the same bytes: at once when they share their buffer (the shared
    /// lines of a request with no fields, or `Transfer.FieldLinesMemo`'s), else line by line.
    static func sameBytes(_ a: [String], _ b: [String]) -> Bool {
        guard a.count == b.count else { return false }
        let shared = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress } }
        return shared || zip(a, b).allSatisfy { $0.isSameBytes(as: $1) }
    }

    /// Installs the error buffer; call after every `reset()`.
    func installErrorBuffer() throws {
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
    }

    private func check(_ code: CURLcode, _ option: CURLoption) throws {
        guard code != CURLE_OK else { return }
        throw TransportError.fromCurl(code, message: "libcurl refused option \(option.rawValue): "
                                      + String(cString: curl_easy_strerror(code)), url: nil)
    }

    // MARK: - Information

    func info(long item: CURLINFO) -> Int {
        var value = 0
        return ccurl_easy_getinfo_long(raw, item, &value) == CURLE_OK ? value : 0
    }

    func info(offset item: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        return ccurl_easy_getinfo_off_t(raw, item, &value) == CURLE_OK ? Int64(value) : 0
    }

    /// The address of the server the last transfer talked to (`CURLINFO_PRIMARY_IP`). The string of
    /// the previous call is handed out again while the address is the same (a handle keeps talking to
    /// one server): comparing the bytes costs less than making the string each time.
    func primaryAddress() -> String? {
        var value: UnsafePointer<CChar>?
        guard ccurl_easy_getinfo_string(raw, CURLINFO_PRIMARY_IP, &value) == CURLE_OK, let value else { return nil }
        if let last = lastPrimaryAddress, last.withCString({ strcmp($0, value) == 0 }) { return last }
        let address = String(cString: value)
        lastPrimaryAddress = address
        return address
    }

    func info(string item: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>?
        guard ccurl_easy_getinfo_string(raw, item, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }
}

/// What a plain request (a body-less GET, or another method with an in-memory body, with the default
/// security policy, no credentials, no client certificate, not a resumed download) sets beyond its
/// URL, callback data, headers and body. Two transfers with equal values configure a handle
/// identically but for those.
struct PlainConfiguration: Equatable {
    var isHTTPS: Bool
    var asksForEncodings: Bool
    /// Whether libcurl was left to read a proxy from the environment (else the handle is set direct), so a
    /// proxy variable set or removed at run time makes the next request configure its handle afresh.
    var environmentNamesProxy: Bool
    var connectTimeoutMilliseconds: Int
    /// "GET" (no body), or the method of a request whose body is a `Data`.
    var method: String
}

extension String {
    /// Whether `self` and `other` are the same UTF-8 bytes (`==` compares canonical equivalence).
    func isSameBytes(as other: String) -> Bool {
        let count = utf8.count
        guard count == other.utf8.count else { return false }
        let compared = utf8.withContiguousStorageIfAvailable { x in
            other.utf8.withContiguousStorageIfAvailable { y in
                guard let xBase = x.baseAddress, let yBase = y.baseAddress else { return true }   // both empty
                return memcmp(xBase, yBase, count) == 0
            }
        }
        if let compared, let same = compared { return same }
        return utf8.elementsEqual(other.utf8)
    }
}
