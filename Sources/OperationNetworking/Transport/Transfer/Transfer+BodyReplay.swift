import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: the request body sent again after a redirect or a challenge

extension Transfer {
    /// `next` (the request a redirect that keeps the body, or an answered challenge, sends) with a
    /// body that goes out from its first byte: data is read again from memory, a multipart body the
    /// serializer built from data and files is built again, and a stream of the caller's that was
    /// already read is replaced by the delegate's (the operation's `needNewBodyStream` block). `nil`
    /// when no new body can be had. Asked after the redirect or challenge block decided, so a block
    /// that drops the body or sets a stream of its own is never second-guessed.
    func withFreshBody(_ next: URLRequest) -> URLRequest? {
        guard let stream = next.httpBodyStream, next.uppercasedMethod != "HEAD" else { return next }
        // A stream other than the one this hop read (the redirect block's own), or one it never
        // opened (the answer came before any body byte was read), goes out as it is.
        guard stream === currentRequest.httpBodyStream, hop.upload?.isUnread != true else { return next }
        var fresh = next
        if let multipart = stream as? MultipartBodyStream, let rebuilt = multipart.rebuilt() {
            fresh.httpBodyStream = rebuilt
        } else if let given = delegate?.transfer(self, needsNewBodyStreamFor: next) {
            fresh.httpBodyStream = given
        } else {
            return nil
        }
        return fresh
    }

    /// The failure of a redirect or challenge whose body could not be had again.
    func bodyStreamExhausted(_ status: Int) -> Error {
        TransportError.make(.requestBodyStreamExhausted,
                            "A \(status) needs the request body again, but it was a stream that could not be "
                            + "made again (see setNeedNewBodyStreamBlock).", url: currentRequest.url)
    }
}
