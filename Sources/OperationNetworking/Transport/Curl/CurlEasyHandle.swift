import CCurl
import CCurlShim
import CTrust
import Foundation

/// Owns one libcurl easy handle and the header list attached to it.
///
/// Options are set through the typed wrappers of `CCurlShim`; a refused option throws a `URLError`
/// (never a crash), which becomes the operation's error.
/// - Threading: not `Sendable`. Built and configured on the network thread and used only there.
final class CurlEasyHandle {
    /// The raw `CURL *`; valid until `deinit`. Options are set through it directly only on a handle
    /// already configured (after `installErrorBuffer()`), so `reset()` knows there is something to clear.
    let raw: UnsafeMutableRawPointer
    /// Header list handed to `CURLOPT_HTTPHEADER`; curl keeps pointing at it, so it lives as long as the handle.
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// curl writes its detailed message for a failure here (`CURLOPT_ERRORBUFFER`).
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// One cell holding the transfer on the handle, unretained, or `nil` while none is. Its own
    /// allocation, so that its address stays put for curl; freed in `deinit`.
    private let ownerCell: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// What every per-transfer callback is given as its data, and the handle's `CURLOPT_PRIVATE`: the
    /// owner cell (`callbackOwner` below reads it back).
    var callbackData: UnsafeMutableRawPointer { UnsafeMutableRawPointer(ownerCell) }

    /// The transfer on the handle, as the callbacks find it (`nil`: none; the handle is pooled).
    /// Unretained: the network thread's table keeps the transfer alive while it is on the handle.
    var owner: Transfer? {
        get { ownerCell.pointee.map { Unmanaged<Transfer>.fromOpaque($0).takeUnretainedValue() } }
        set { ownerCell.pointee = newValue.map { Unmanaged.passUnretained($0).toOpaque() } }
    }

    /// Whether an option was set since the handle was made or last reset.
    private var hasOptions = false

    /// Easy handles alive in the process (tests check that none leak).
    private static let live = Protected(0)
    static var liveCount: Int { live.value }

    /// A new handle; `share`, when given, is attached for the handle's whole life (`reset` keeps it).
    init?(share: UnsafeMutableRawPointer? = nil) {
        guard let handle = curl_easy_init() else { return nil }
        if let share { _ = ccurl_easy_setopt_ptr(handle, CURLOPT_SHARE, share) }
        ownerCell = .allocate(capacity: 1)
        ownerCell.initialize(to: nil)
        CurlEasyHandle.live.withLock { $0 += 1 }
        raw = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        CurlEasyHandle.live.withLock { $0 -= 1 }
        curl_easy_cleanup(raw)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
        ownerCell.deallocate()
    }

    /// Clears every option (keeps the handle's caches), so the handle can serve the next hop or request.
    /// A handle no option was set on since it was made or last reset has nothing to clear.
    func reset() {
        guard hasOptions else { return }
        hasOptions = false
        curl_easy_reset(raw)
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        errorBuffer[0] = 0
    }

    /// curl's message for the last failure, if it wrote one.
    var errorMessage: String? {
        let message = String(cString: errorBuffer)
        return message.isEmpty ? nil : message
    }

    // MARK: - Options

    func set(_ option: CURLoption, _ value: Int) throws {
        hasOptions = true
        try check(ccurl_easy_setopt_long(raw, option, value), option)
    }

    func set(_ option: CURLoption, _ value: Bool) throws {
        hasOptions = true
        try check(ccurl_easy_setopt_long(raw, option, value ? 1 : 0), option)
    }

    func set(_ option: CURLoption, offset value: Int64) throws {
        hasOptions = true
        try check(ccurl_easy_setopt_off_t(raw, option, curl_off_t(value)), option)
    }

    /// String options are copied by libcurl, so the Swift string need not outlive the call.
    func set(_ option: CURLoption, _ value: String) throws {
        hasOptions = true
        try check(value.withCString { ccurl_easy_setopt_str(raw, option, $0) }, option)
    }

    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws {
        hasOptions = true
        try check(ccurl_easy_setopt_ptr(raw, option, value), option)
    }

    /// Sets `option` through `setter`, one of `CCurlShim`'s typed wrappers given the raw handle (a
    /// callback function, a blob): for the options the other `set`s do not take, refused as they are.
    func set(_ option: CURLoption, through setter: (UnsafeMutableRawPointer) -> CURLcode) throws {
        hasOptions = true
        try check(setter(raw), option)
    }

    /// Replaces the request header list (`"Name: value"` lines; `"Name:"` removes a header curl would add).
    func setHeaders<Lines: Sequence<String>>(_ lines: Lines) throws {
        hasOptions = true
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
    }

    /// Installs the error buffer; call after every `reset()`.
    func installErrorBuffer() throws {
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
    }

    /// Throws the `URLError` for an option libcurl refused, naming the option: the one check of every
    /// option the library sets.
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

    /// The address of the server the last transfer talked to (`CURLINFO_PRIMARY_IP`).
    func primaryAddress() -> String? {
        info(string: CURLINFO_PRIMARY_IP)
    }

    func info(string item: CURLINFO) -> String? {
        var value: UnsafePointer<CChar>?
        guard ccurl_easy_getinfo_string(raw, item, &value) == CURLE_OK, let value else { return nil }
        return String(cString: value)
    }

    /// Whether the TLS connection this handle's hop runs on speaks HTTP/1.x (true) or HTTP/2 (false),
    /// as its handshake settled it (ALPN; a handshake that chose nothing means HTTP/1.1); `nil` while
    /// the handshake is under way or when it cannot be told. OpenSSL is asked through `CTrust`, which
    /// links the libssl libcurl uses; with another TLS library (no OpenSSL connection to ask) an origin
    /// is learned only when its first response ends.
    var negotiatedHTTP1: Bool? {
        var pointer: UnsafeMutableRawPointer?
        guard ccurl_easy_getinfo_ptr(raw, CURLINFO_TLS_SSL_PTR, &pointer) == CURLE_OK, let pointer else { return nil }
        let session = pointer.assumingMemoryBound(to: curl_tlssessioninfo.self).pointee
        guard session.backend == CURLSSLBACKEND_OPENSSL, let ssl = session.internals else { return nil }
        var name: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        ctrust_alpn_selected(ssl, &name, &length)
        guard let name, length > 0 else {
            return info(offset: CURLINFO_APPCONNECT_TIME_T) > 0 ? true : nil
        }
        return !(length == 2 && name[0] == UInt8(ascii: "h") && name[1] == UInt8(ascii: "2"))
    }
}

// Every C callback the library installs. Each one only turns the userdata pointer back into its
// `Transfer` (kept alive by the network thread's table while curl can call back) and forwards.
// All of them run on the network thread, inside curl_multi_perform.
//
// The userdata of every per-transfer callback is the easy handle's `callbackData`, set once per
// handle configuration: a cell holding the transfer on the handle (`CurlEasyHandle.owner`), which the
// transfer sets when it begins a hop (`nil` while the handle is pooled).

/// The transfer owning the handle whose callback data is `userdata`, unretained.
func callbackOwner(_ userdata: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    userdata?.assumingMemoryBound(to: UnsafeMutableRawPointer?.self).pointee
}

private func transfer(_ userdata: UnsafeMutableRawPointer?) -> Transfer? {
    guard let owner = callbackOwner(userdata) else { return nil }
    return Unmanaged<Transfer>.fromOpaque(owner).takeUnretainedValue()
}

/// Hands the bytes of a header or write callback to `receive` on the transfer. The byte count, or 0
/// to abort.
private func received(_ buffer: UnsafeMutablePointer<CChar>?, _ length: Int, _ userdata: UnsafeMutableRawPointer?,
                      _ receive: (Transfer, UnsafeRawBufferPointer) -> Bool) -> Int {
    guard let buffer, let transfer = transfer(userdata) else { return 0 }
    return receive(transfer, UnsafeRawBufferPointer(start: buffer, count: length)) ? length : 0
}

/// `CURLOPT_HEADERFUNCTION`: one response header line (status line and the empty line included).
let curlHeaderCallback: curl_write_callback = { buffer, size, count, userdata in
    received(buffer, size * count, userdata) { $0.receiveHeaderLine($1) }
}

/// `CURLOPT_WRITEFUNCTION`: a piece of the (decoded) response body.
let curlWriteCallback: curl_write_callback = { buffer, size, count, userdata in
    received(buffer, size * count, userdata) { $0.receiveBody($1) }
}

/// `CURLOPT_READFUNCTION`: fill curl's buffer with request body bytes.
let curlReadCallback: curl_read_callback = { buffer, size, count, userdata in
    guard let buffer, let transfer = transfer(userdata) else { return ccurl_readfunc_abort() }
    let capacity = size * count
    let produced = buffer.withMemoryRebound(to: UInt8.self, capacity: capacity) {
        transfer.sendBody(into: $0, capacity: capacity)
    }
    if produced == UploadSource.mustWait { return ccurl_readfunc_pause() }
    return produced < 0 ? ccurl_readfunc_abort() : produced
}

/// `CURLOPT_OPENSOCKETFUNCTION`: opens the connection's socket as libcurl would (plus close-on-exec),
/// so that the reason a socket could not be made (`EMFILE`) reaches the error; curl keeps no errno for it.
/// A transfer marked cancelled opens none (`CURL_SOCKET_BAD`): its `cancel()` may have returned while
/// the network thread had not yet read the cancel command, and no connection may follow it.
let curlOpenSocketCallback: curl_opensocket_callback = { userdata, _, address in
    let owner = transfer(userdata)
    guard let address, owner?.isCancelRequested != true else { return -1 }
    let socketType = address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue)
    let descriptor = socket(address.pointee.family, socketType, address.pointee.protocol)
    owner?.socketOpened(descriptor, error: descriptor < 0 ? errno : 0)
    return descriptor
}

/// `CURLOPT_SEEKFUNCTION`: rewind the request body (curl asks before re-sending it).
let curlSeekCallback: curl_seek_callback = { userdata, offset, origin in
    guard let transfer = transfer(userdata), origin == SEEK_SET, offset == 0 else {
        return Int32(CURL_SEEKFUNC_CANTSEEK)
    }
    return transfer.rewindBody() ? Int32(CURL_SEEKFUNC_OK) : Int32(CURL_SEEKFUNC_CANTSEEK)
}
