import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// The cache against nginx's own caching fields: `expires` (Expires and `Cache-Control: max-age`),
/// its `ETag` and `Last-Modified` with the `304`s it answers, `add_header Cache-Control`, and
/// `gzip_vary`. nginx's access log tells which requests reached it and with which validators.
final class CacheNginxTests: LibraryTestCase {
    private var nginx: ExternalServer?
    private var cache: URLCache!
    private var cacheDirectory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let server = try ExternalServer.nginxCaching()
        nginx = server
        cacheDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-cache-\(UUID().uuidString)")
        cache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 20 << 20, diskPath: cacheDirectory.path)
    }

    override func tearDown() {
        nginx?.stop()
        try? FileManager.default.removeItem(at: cacheDirectory)
        super.tearDown()
    }

    private func fetch(_ path: String, headers: [String: String] = [:]) throws -> HTTPRequestOperation {
        let server = try XCTUnwrap(nginx)
        var request = URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:\(server.port)\(path)")))
        request.timeoutInterval = 10
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let operation = HTTPRequestOperation(request: request)
        operation.urlCache = cache
        XCTAssertTrue(run(operation).isSuccess, path)
        return operation
    }

    /// nginx's log lines for `path`: `status "If-None-Match" "If-Modified-Since"`, once there are at least
    /// `count` of them (or 5 s passed). nginx writes a line after the response's last byte went out, so
    /// the client may have it first.
    private func served(_ path: String, lines count: Int) throws -> [String] {
        let server = try XCTUnwrap(nginx)
        let lines: @Sendable () -> [String] = {
            server.accessLog.filter { $0.hasPrefix(path + " ") }.map { String($0.dropFirst(path.count + 1)) }
        }
        _ = eventually { lines().count >= count }
        return lines()
    }

    func testExpiresAnswersFromTheCache() throws {
        let first = try fetch("/expires.txt")
        let second = try fetch("/expires.txt")
        XCTAssertEqual(first.metrics?.cacheStatus, .stored)
        XCTAssertEqual(second.metrics?.cacheStatus, .hit)
        XCTAssertEqual(second.responseData, Data("expires\n".utf8))
        XCTAssertEqual(try served("/expires.txt", lines: 1), ["200 \"\" \"\""])
    }

    func testETagRevalidationGetsA304() throws {
        let first = try fetch("/revalidate.txt")
        let second = try fetch("/revalidate.txt")
        let etag = try XCTUnwrap(first.response?.value(forHTTPHeaderField: "ETag"))
        let modified = try XCTUnwrap(first.response?.value(forHTTPHeaderField: "Last-Modified"))
        XCTAssertEqual(try served("/revalidate.txt", lines: 2), ["200 \"\" \"\"", "304 \"\(etag)\" \"\(modified)\""])
        XCTAssertEqual(second.metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(second.response?.statusCode, 200)
        XCTAssertEqual(second.responseData, Data("revalidate\n".utf8))

        // The file changes: nginx's new ETag answers with the whole body, which replaces the stored one.
        let file = try XCTUnwrap(nginx).directory.appendingPathComponent("revalidate.txt")
        try Data("changed content\n".utf8).write(to: file)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: file.path)
        let third = try fetch("/revalidate.txt")
        XCTAssertEqual(third.responseData, Data("changed content\n".utf8))
        XCTAssertEqual(third.metrics?.cacheStatus, .stored)
        XCTAssertEqual(try served("/revalidate.txt", lines: 3).last?.hasPrefix("200 \"\(etag)\""), true)
    }

    func testLastModifiedRevalidationWithoutETag() throws {
        let first = try fetch("/dated.txt")
        let second = try fetch("/dated.txt")
        XCTAssertNil(first.response?.value(forHTTPHeaderField: "ETag"))
        let modified = try XCTUnwrap(first.response?.value(forHTTPHeaderField: "Last-Modified"))
        XCTAssertEqual(try served("/dated.txt", lines: 2), ["200 \"\" \"\"", "304 \"\" \"\(modified)\""])
        XCTAssertEqual(second.metrics?.cacheStatus, .revalidated)
        XCTAssertEqual(second.responseData, Data("dated\n".utf8))
    }

    func testNoStoreAndVary() throws {
        _ = try fetch("/nostore.txt")
        XCTAssertEqual(try fetch("/nostore.txt").metrics?.cacheStatus, .miss)
        XCTAssertEqual(try served("/nostore.txt", lines: 2).count, 2)

        let compressed = try fetch("/vary.txt")
        XCTAssertEqual(compressed.response?.value(forHTTPHeaderField: "Vary"), "Accept-Encoding")
        XCTAssertEqual(compressed.responseData, Data(String(repeating: "vary ", count: 200).utf8), "decoded")
        XCTAssertEqual(try fetch("/vary.txt").metrics?.cacheStatus, .hit)
        XCTAssertEqual(try fetch("/vary.txt", headers: ["Accept-Encoding": "identity"]).metrics?.cacheStatus, .stored,
                       "another Accept-Encoding is another representation")
        XCTAssertEqual(try served("/vary.txt", lines: 2).count, 2)
    }
}

extension ExternalServer {
    /// nginx over plain HTTP with a file per caching behaviour: `/expires.txt` (`expires 1h`),
    /// `/revalidate.txt` (`Cache-Control: no-cache`, ETag and Last-Modified), `/dated.txt` (`max-age=0`,
    /// Last-Modified only), `/nostore.txt` (`no-store`) and `/vary.txt` (gzip with `Vary:
    /// Accept-Encoding`, an hour fresh). The access log has `$uri $status "$http_if_none_match"
    /// "$http_if_modified_since"`.
    static func nginxCaching() throws -> ExternalServer {
        try ExternalServer(executable: "/usr/sbin/nginx", name: "nginx", arguments: { ["-p", ".", "-c", $0] }) { port, directory in
            for name in ["expires", "revalidate", "dated", "nostore"] {
                try Data("\(name)\n".utf8).write(to: directory.appendingPathComponent("\(name).txt"))
            }
            try Data(String(repeating: "vary ", count: 200).utf8).write(to: directory.appendingPathComponent("vary.txt"))
            let path = directory.path
            return nginxPreamble(path: path, connections: 256) + """
                log_format cache escape=none '$uri $status "$http_if_none_match" "$http_if_modified_since"';
                access_log \(path)/access.log cache;
                default_type text/plain;
                server {
                    listen 127.0.0.1:\(port);
                    root \(path);
                    location = /expires.txt { expires 1h; }
                    location = /revalidate.txt { add_header Cache-Control "no-cache"; }
                    location = /dated.txt { etag off; add_header Cache-Control "max-age=0"; }
                    location = /nostore.txt { add_header Cache-Control "no-store"; }
                    location = /vary.txt {
                        expires 1h;
                        gzip on; gzip_vary on; gzip_min_length 0; gzip_types text/plain;
                    }
                }
            }
            """
        }
    }
}
