import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A misbehaving HTTP peer on 127.0.0.1 built on plain sockets, for responses no well-formed server
/// (SwiftNIO's encoder included) would send: each connection gets its request read up to the blank
/// line, then exactly the response's bytes, then a close. A slow server sends them in pieces, a pause
/// between each two; a stalling one keeps the connection open after the last until the client closes.
/// - Threading: the response is fixed at init; the accept loop runs on its own thread until `stop()`
///   shuts the listening socket down (`listener`, guarded by `lock`); the loop's thread closes it.
final class RawServer: @unchecked Sendable {
    let port: Int
    private let pieces: [[UInt8]]
    private let pauseMicroseconds: UInt32
    private let holdsOpen: Bool
    private let lock = NSLock()
    private var listener: Int32   // guarded by lock

    /// Listens on an ephemeral port; `nil` if the socket cannot be made. The response is `pieces`,
    /// `pauseMilliseconds` apart; with `holdsOpen` the connection then stays open until the client closes it.
    init?(pieces: [[UInt8]], pauseMilliseconds: Int = 0, holdsOpen: Bool = false) {
        self.pieces = pieces
        pauseMicroseconds = UInt32(clamping: pauseMilliseconds * 1_000)
        self.holdsOpen = holdsOpen
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0, listen(fd, 16) == 0 else {
            close(fd)
            return nil
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "RawServer"
        thread.start()
    }

    convenience init?(response: [UInt8]) {
        self.init(pieces: [response])
    }

    convenience init?(_ text: String) {
        self.init(response: Array(text.utf8))
    }

    var url: URL? { URL(string: "http://127.0.0.1:\(port)/") }

    /// Stops accepting: the accept loop's next `accept` fails and the loop closes the socket. Closing it
    /// here instead would free its number while the loop may still be about to `accept` on it; the next
    /// RawServer's socket could get that number, and this server would answer its requests.
    func stop() {
        lock.withLock {
            if listener >= 0 {
                shutdown(listener, Int32(SHUT_RDWR))
                listener = -1
            }
        }
    }

    deinit { stop() }

    private func acceptLoop(_ fd: Int32) {
        defer { close(fd) }
        while true {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            serve(connection)
        }
    }

    private func serve(_ connection: Int32) {
        // The whole request is read (head and a Content-Length body): closing with unread bytes would
        // send a reset instead of the response.
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var needed = Int.max
        while request.count < needed {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { break }
            request.append(contentsOf: buffer[0..<count])
            if needed == .max, let end = RawServer.headEnd(request) {
                needed = end + RawServer.contentLength(String(decoding: request[0..<end], as: UTF8.self))
            }
        }
        for (index, piece) in pieces.enumerated() {
            // The server's own pace, not a wait for anything: a slow peer is what is being served.
            if index > 0 && pauseMicroseconds > 0 { usleep(pauseMicroseconds) }
            var sent = 0
            while sent < piece.count {
                // MSG_NOSIGNAL: a client that gave up and closed must not raise SIGPIPE in the test process.
                let count = piece[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { break }
                sent += count
            }
        }
        if holdsOpen {
            while read(connection, &buffer, buffer.count) > 0 {}   // until the client gives up and closes
        }
        shutdown(connection, Int32(SHUT_WR))
        close(connection)
    }

    /// The offset just past the blank line that ends the head, if it arrived.
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index..<(index + 4)].elementsEqual([13, 10, 13, 10]) {
            return index + 4
        }
        return nil
    }

    /// The request's `Content-Length`, 0 without one.
    private static func contentLength(_ head: String) -> Int {
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }
}
