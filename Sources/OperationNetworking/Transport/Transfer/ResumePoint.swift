import Foundation

/// Where a transfer left off when it was paused, so a later transfer can continue with a Range request.
struct ResumePoint: Sendable {
    /// Where in the resource the download continues: the first byte the sink does not hold yet. For a
    /// request that carried its own `Range: bytes=A-…` (AFNetworking's pattern for appending to a
    /// partial file) and got a 206, that is A plus the bytes received, not the bytes received alone.
    var offset: Int64
    /// The last byte of the caller's closed range (`bytes=A-B`), kept for the continuation.
    var rangeEnd: Int64? = nil
    /// The `ETag` (preferred) or `Last-Modified` of the response those bytes came from, sent as `If-Range`.
    var validator: String?
    /// Whether the server advertised `Accept-Ranges: bytes`; without it the download restarts from zero.
    var rangesSupported: Bool
    /// The resource's full length when a response said it (a 200's `Content-Length`, a 206's
    /// `Content-Range` total): a continuation must agree with it and end exactly there.
    var totalLength: Int64? = nil
}
