import Foundation

/// One route the test server answers, as `onet serve --help` lists it.
public struct TestServerRoute: Sendable {
    /// The path, with its arguments in capitals: `/bytes/N`.
    public let path: String
    /// What it answers.
    public let summary: String
    /// Its query parameters: name and meaning, in the order shown.
    public let parameters: [(name: String, meaning: String)]
    /// A path and query to try it with.
    public let example: String
}

/// Every route of `TestServerHandler.route` and every query parameter the routes read, with one
/// example each. `OnetServeTests` checks the list against the dispatch in Routes.swift and the
/// parameters the route files read, so it cannot drift from what the server does.
public enum RouteCatalog {
    /// The routes, in the order `onet serve --help` shows them.
    public static let routes: [TestServerRoute] = [
        TestServerRoute(path: "/echo", summary: "the request as JSON: method, uri, path, query, headers in wire order, body",
                        parameters: [], example: "/echo?name=ada"),
        TestServerRoute(path: "/status/N", summary: "status N (200-999) with a small JSON body",
                        parameters: [("location", "a Location header"), ("body", "the body instead of {\"status\":N}"),
                                     ("contentType", "the Content-Type instead of application/json")],
                        example: "/status/302?location=/echo"),
        TestServerRoute(path: "/delay/MS", summary: "answers \"delayed\" after MS milliseconds (at most 600000)",
                        parameters: [], example: "/delay/1500"),
        TestServerRoute(path: "/bytes/N", summary: "N bytes of a fixed pattern, with ETag, Last-Modified and single Range requests",
                        parameters: [("chunkSize", "bytes per write"), ("chunkDelayMs", "pause between writes: slows a download to pause and resume it"),
                                     ("headDelayMs", "hold the response head back"), ("etag", "the ETag to send"),
                                     ("ignoreRange", "1: answer every Range with the whole body (200)"),
                                     ("rangeSkew", "start a 206 this many bytes late"), ("rangeShort", "end a 206 this many bytes early")],
                        example: "/bytes/10485760?chunkSize=65536&chunkDelayMs=100"),
        TestServerRoute(path: "/chunked/N", summary: "the pattern with Transfer-Encoding: chunked",
                        parameters: [("chunkSize", "bytes per chunk (1000)"), ("chunkDelayMs", "pause between chunks")],
                        example: "/chunked/100000?chunkSize=10000&chunkDelayMs=200"),
        TestServerRoute(path: "/drop/N", summary: "promises 2N bytes, sends N, closes (a body cut short)",
                        parameters: [], example: "/drop/100000"),
        TestServerRoute(path: "/stall", summary: "promises 1,000,000 bytes, sends 100, then goes silent",
                        parameters: [], example: "/stall"),
        TestServerRoute(path: "/stall-headers", summary: "never answers (a server that hangs before its head)",
                        parameters: [], example: "/stall-headers"),
        TestServerRoute(path: "/claims/N", summary: "says Content-Length: N, sends 100 bytes, closes (a server that lies)",
                        parameters: [], example: "/claims/5000"),
        TestServerRoute(path: "/huge-headers/KB", summary: "about KB KiB of response header fields",
                        parameters: [], example: "/huge-headers/64"),
        TestServerRoute(path: "/gzip", summary: "11,000 bytes of text, gzip-compressed when the request accepts it",
                        parameters: [], example: "/gzip"),
        TestServerRoute(path: "/brotli/N", summary: "N pattern bytes with Content-Encoding: br",
                        parameters: [("zeros", "1: N zero bytes (a decompression bomb when N is large)"),
                                     ("cut", "leave off the last K compressed bytes"), ("damage", "1: corrupt the second half"),
                                     ("chunkSize", "compressed bytes per write")],
                        example: "/brotli/100000"),
        TestServerRoute(path: "/zstd/N", summary: "N pattern bytes with Content-Encoding: zstd (same parameters as /brotli)",
                        parameters: [], example: "/zstd/100000?damage=1"),
        TestServerRoute(path: "/redirect/N", summary: "N redirects in a row, then /echo",
                        parameters: [("status", "the redirect status (302)")], example: "/redirect/3?status=307"),
        TestServerRoute(path: "/redirect-to", summary: "one redirect to ?url=",
                        parameters: [("url", "where to"), ("status", "the redirect status (302)")],
                        example: "/redirect-to?url=/echo&status=301"),
        TestServerRoute(path: "/redirect-loop", summary: "redirects to itself for ever", parameters: [],
                        example: "/redirect-loop"),
        TestServerRoute(path: "/flaky/N/KEY", summary: "fails the first N requests for KEY, then answers \"success K\"",
                        parameters: [("status", "the failure status (503)"), ("retryAfter", "a Retry-After header on failures")],
                        example: "/flaky/2/demo?retryAfter=1"),
        TestServerRoute(path: "/auth/basic/USER/PASSWORD", summary: "200 for Basic USER:PASSWORD, else a 401 challenge",
                        parameters: [], example: "/auth/basic/ada/secret"),
        TestServerRoute(path: "/auth/digest/USER/PASSWORD", summary: "200 for Digest (MD5, qop=auth) USER:PASSWORD, else a 401 challenge",
                        parameters: [], example: "/auth/digest/ada/secret"),
        TestServerRoute(path: "/bearer/TOKEN", summary: "200 for Authorization: Bearer TOKEN, else a 401 (WWW-Authenticate: Bearer)",
                        parameters: [("barrier", "hold each answer until the path got N requests")], example: "/bearer/abc"),
        TestServerRoute(path: "/refresh/TOKEN", summary: "answers TOKEN as text, X-Request-Count: the path's requests so far",
                        parameters: [("status", "that status (400-599) instead of the token")], example: "/refresh/abc"),
        TestServerRoute(path: "/cache/NAME", summary: "a resource with HTTP caching fields and 304s; GET answers \"NAME vV #N\", other methods change V",
                        parameters: [("cc", "the Cache-Control"), ("etag", "strong or weak: an ETag for the version"),
                                     ("lastModified", "1: a Last-Modified for the version"), ("expires", "the Expires"),
                                     ("date", "the Date (now; none for none)"), ("age", "the Age"),
                                     ("ageFirst", "the Age of the first GET's answer only"),
                                     ("mismatch304", "1: answer a conditional GET 304 with another ETag"),
                                     ("revalidationDelayMs", "hold back the answer to a conditional GET"),
                                     ("vary", "the Vary; the body adds the request's value of each field"),
                                     ("notModified", "0: never answer 304"), ("failUnsafe", "1: answer other methods 500"), ("status", "the status (200; 204 for other methods)"),
                                     ("location", "a Location header"), ("contentLocation", "a Content-Location header"),
                                     ("cookie", "a Set-Cookie on a GET's answer")],
                        example: "/cache/feed?cc=max-age%3D60&etag=strong"),
        TestServerRoute(path: "/cookies/set", summary: "a Set-Cookie (Path=/) for each query item",
                        parameters: [("NAME", "any name: NAME=VALUE becomes a cookie")], example: "/cookies/set?session=abc"),
        TestServerRoute(path: "/cookies/raw", summary: "one Set-Cookie per set= item, exactly as given",
                        parameters: [("set", "a whole Set-Cookie value, attributes included")],
                        example: "/cookies/raw?set=id%3D1%3B%20Max-Age%3D60"),
        TestServerRoute(path: "/upload", summary: "reads the body, answers {\"bodyLength\": N}", parameters: [],
                        example: "/upload"),
        TestServerRoute(path: "/sink", summary: "counts a streamed body without keeping it, answers {\"bodyLength\": N}",
                        parameters: [], example: "/sink"),
        TestServerRoute(path: "/close", summary: "answers \"bye\" and closes the connection", parameters: [],
                        example: "/close"),
    ]
}
