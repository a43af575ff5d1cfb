import CCurl
import CCurlShim
import Foundation

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
