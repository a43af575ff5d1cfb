import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// What the transport puts on the wire and what it reads back.
final class TransportWireTests: ServerTestCase {
    func testGETReachesServerAndBodyComesBack() throws {
        var request = request("/echo?a=1")
        request.setValue("yes", forHTTPHeaderField: "X-Test")
        let (operation, outcome) = run(request)
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertEqual(operation.response?.statusCode, 200)
        let logged = try XCTUnwrap(server.requests(path: "/echo").first)
        XCTAssertEqual(logged.method, "GET")
        XCTAssertEqual(logged.uri, "/echo?a=1")
        XCTAssertEqual(logged.header("X-Test"), "yes")
        XCTAssertNil(logged.header("Expect"))
        XCTAssertEqual(echo(operation)["method"] as? String, "GET")
    }

    func testPOSTSendsBodyWithExactLength() throws {
        var request = request("/echo", method: "POST")
        request.httpBody = Data("hello=world".utf8)
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        let (_, outcome) = run(request)
        XCTAssertTrue(outcome.isSuccess)
        let logged = try XCTUnwrap(server.requests(path: "/echo").first)
        XCTAssertEqual(logged.method, "POST")
        XCTAssertEqual(logged.body, Data("hello=world".utf8))
        XCTAssertEqual(logged.header("Content-Length"), "11")
        XCTAssertEqual(logged.header("Content-Type"), "application/x-www-form-urlencoded")
    }

    func testEveryMethodGoesOutAsIs() throws {
        for method in ["PUT", "PATCH", "DELETE", "OPTIONS"] {
            var request = request("/echo", method: method)
            if method != "DELETE" && method != "OPTIONS" { request.httpBody = Data(method.utf8) }
            XCTAssertTrue(run(request).1.isSuccess, method)
        }
        let logged = server.requests(path: "/echo")
        XCTAssertEqual(logged.map(\.method), ["PUT", "PATCH", "DELETE", "OPTIONS"])
        XCTAssertEqual(logged[0].body, Data("PUT".utf8))
        XCTAssertEqual(logged[1].body, Data("PATCH".utf8))
    }

    /// A method in lower or mixed case goes out in upper case; one in upper case goes out untouched.
    func testMethodsGoOutInUpperCase() throws {
        for method in ["post", "Patch", "delete", "GET"] {
            var request = request("/echo", method: method)
            if method == "post" || method == "Patch" { request.httpBody = Data(method.utf8) }
            XCTAssertTrue(run(request).1.isSuccess, method)
        }
        XCTAssertEqual(server.requests(path: "/echo").map(\.method), ["POST", "PATCH", "DELETE", "GET"])
        XCTAssertEqual(Transfer.uppercasedMethod("g\u{e9}t"), "G\u{c9}T")   // as uppercased() would
    }

    func testHEADHasNoBody() throws {
        let (operation, outcome) = run(request("/bytes/1000", method: "HEAD"))
        XCTAssertTrue(outcome.isSuccess)
        XCTAssertEqual(server.requests.first?.method, "HEAD")
        XCTAssertEqual(operation.response?.expectedContentLength, 1000)
        XCTAssertEqual(operation.responseData, Data())
    }

    func testBodyStreamUploadsWithoutLengthAsChunked() throws {
        var request = request("/upload", method: "POST")
        let payload = deterministicBytes(200_000)
        request.httpBodyStream = InputStream(data: payload)
        XCTAssertTrue(run(request).1.isSuccess)
        let logged = try XCTUnwrap(server.requests(path: "/upload").first)
        XCTAssertEqual(logged.body, payload)
        XCTAssertEqual(logged.header("Transfer-Encoding")?.lowercased(), "chunked")
    }

    func testGzipIsOfferedAndDecoded() throws {
        let (operation, outcome) = run(request("/gzip"))
        XCTAssertTrue(outcome.isSuccess)
        let offered = try XCTUnwrap(server.requests.first?.header("Accept-Encoding"))
        XCTAssertTrue(offered.contains("gzip"), offered)
        XCTAssertEqual(operation.response?.value(forHTTPHeaderField: "Content-Encoding"), "gzip")
        XCTAssertEqual(operation.responseString, String(repeating: "hello gzip ", count: 1000))
    }

    func testCallerAcceptEncodingIsKeptAndBodyLeftEncoded() throws {
        var request = request("/gzip")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let (operation, _) = run(request)
        XCTAssertEqual(server.requests.first?.header("Accept-Encoding"), "identity")
        XCTAssertEqual(operation.responseString, String(repeating: "hello gzip ", count: 1000))
    }

    func testChunkedResponseIsReassembled() {
        let (operation, outcome) = run(request("/chunked/25000"))
        XCTAssertTrue(outcome.isSuccess)
        XCTAssertEqual(operation.responseData, deterministicBytes(25000))
    }

    func testConnectionIsReusedAcrossOperations() {
        for _ in 0..<5 { XCTAssertTrue(run(request("/bytes/100")).1.isSuccess) }
        XCTAssertEqual(server.acceptedConnections, 1)
        XCTAssertEqual(Set(server.requests.map(\.connectionID)).count, 1)
    }

    func testMetricsAreFilled() throws {
        let (first, _) = run(request("/bytes/10"))
        let (second, _) = run(request("/bytes/10"))
        let metrics = try XCTUnwrap(first.metrics)
        XCTAssertEqual(metrics.remoteAddress, "127.0.0.1")
        XCTAssertEqual(metrics.httpVersion, "1.1")
        XCTAssertFalse(metrics.connectionReused)
        XCTAssertGreaterThan(metrics.total, 0)
        XCTAssertLessThanOrEqual(metrics.firstByte, metrics.total)
        XCTAssertEqual(second.metrics?.connectionReused, true)
    }

    /// A pooled handle reuses the address string it made last only while the address is the same:
    /// requests alternating between servers on 127.0.0.1 and 127.0.0.2 each report their own.
    func testMetricsRemoteAddressFollowsTheServer() throws {
        let other = try TestServer(host: "127.0.0.2")
        defer { other.shutdown() }
        var addresses: [String?] = []
        for url in [server.url("/bytes/10"), other.url("/bytes/10"), other.url("/bytes/10"), server.url("/bytes/10")] {
            let (operation, outcome) = run(URLRequest(url: url))
            XCTAssertTrue(outcome.isSuccess)
            addresses.append(operation.metrics?.remoteAddress)
        }
        XCTAssertEqual(addresses, ["127.0.0.1", "127.0.0.2", "127.0.0.2", "127.0.0.1"])
    }

    func testCookiesAreStoredAndSent() throws {
        let name = "onet\(UInt32.random(in: 0...UInt32.max))"
        XCTAssertTrue(run(request("/cookies/set?\(name)=v1")).1.isSuccess)
        XCTAssertTrue(run(request("/echo")).1.isSuccess)
        let cookie = try XCTUnwrap(server.requests(path: "/echo").first?.header("Cookie"))
        XCTAssertTrue(cookie.contains("\(name)=v1"), cookie)
        var noCookies = request("/echo")
        noCookies.httpShouldHandleCookies = false
        XCTAssertTrue(run(noCookies).1.isSuccess)
        XCTAssertNil(server.requests(path: "/echo").last?.header("Cookie"))
        HTTPCookieStorage.shared.cookies?.filter { $0.name == name }.forEach(HTTPCookieStorage.shared.deleteCookie)
    }

    func testResponseStringUsesCharset() {
        let (operation, _) = run(request("/status/200?contentType=text/plain;%20charset=iso-8859-1&body=caf%C3%A9"))
        XCTAssertEqual(operation.responseStringEncoding, .isoLatin1)
    }
}
