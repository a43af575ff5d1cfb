import CCurl
import CCurlShim
import Foundation

// Every C callback the library installs. Each one only turns the userdata pointer back into its
// `Transfer` (kept alive by the network thread's table while curl can call back) and forwards.
// All of them run on the network thread, inside curl_multi_perform.
//
// The userdata of every per-transfer callback is the easy handle's `ccurl_header_block`, set once
// per handle configuration; its `owner` is the transfer on the handle, which the transfer sets when
// it begins a hop (`nil` while the handle is pooled).

/// The transfer owning the handle whose callback data is `userdata`, unretained.
func callbackOwner(_ userdata: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    userdata?.assumingMemoryBound(to: ccurl_header_block.self).pointee.owner
}

private func transfer(_ userdata: UnsafeMutableRawPointer?) -> Transfer? {
    guard let owner = callbackOwner(userdata) else { return nil }
    return Unmanaged<Transfer>.fromOpaque(owner).takeUnretainedValue()
}

/// Hands the bytes of a header or write callback to `receive` on the transfer, borrowed without a
/// retain (the network thread's table keeps it alive throughout the call): these two run for every
/// response, several times. The byte count, or 0 to abort.
private func received(_ buffer: UnsafeMutablePointer<CChar>?, _ length: Int, _ userdata: UnsafeMutableRawPointer?,
                      _ receive: (Transfer, UnsafeRawBufferPointer) -> Bool) -> Int {
    guard let buffer, let owner = callbackOwner(userdata) else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: buffer, count: length)
    return Unmanaged<Transfer>.fromOpaque(owner)._withUnsafeGuaranteedRef { receive($0, bytes) } ? length : 0
}

/// `ccurl_header_block.on_event`: a header block's status line, its end or a refusal (`CURLOPT_HEADERFUNCTION`
/// is `ccurl_header_callback`, which keeps field lines in C). The block's owner is its transfer,
/// borrowed as in `received`. 0 aborts.
let curlHeaderEvent: ccurl_header_event_callback = { block, line, length, event in
    guard let block, let line, let owner = block.pointee.owner else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: line, count: length)
    return Unmanaged<Transfer>.fromOpaque(owner)._withUnsafeGuaranteedRef {
        $0.receiveHeaderEvent(event, line: bytes, block: block)
    } ? 1 : 0
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
    guard let transfer = owner else { return descriptor }
    if descriptor < 0 {
        transfer.hop.socketOpenError = errno
    } else {
        transfer.network?.idleConnections.opened(descriptor)
    }
    return descriptor
}

/// `CURLOPT_SEEKFUNCTION`: rewind the request body (curl asks before re-sending it).
let curlSeekCallback: curl_seek_callback = { userdata, offset, origin in
    guard let transfer = transfer(userdata), origin == SEEK_SET, offset == 0 else {
        return Int32(CURL_SEEKFUNC_CANTSEEK)
    }
    return transfer.rewindBody() ? Int32(CURL_SEEKFUNC_OK) : Int32(CURL_SEEKFUNC_CANTSEEK)
}
