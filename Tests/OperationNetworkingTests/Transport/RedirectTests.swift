import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Redirects are followed by the library, hop by hop, by AFN's rules: method by status, credentials kept to one origin, 16 hops.
final class RedirectTests: ServerTestCase {
    func testChainIsFollowedAndCounted() throws {
        let (operation, outcome) = run(request("/redirect/3"))
        XCTAssertTrue(outcome.isSuccess)
        XCTAssertEqual(server.requests.map(\.path), ["/redirect/3", "/redirect/2", "/redirect/1", "/redirect/0"])
        XCTAssertEqual(operation.metrics?.redirectCount, 3)
        XCTAssertEqual(operation.currentRequest.url?.path, "/redirect/0")
        XCTAssertEqual(operation.request.url?.path, "/redirect/3")
        XCTAssertEqual(operation.response?.statusCode, 200)
        XCTAssertEqual(server.acceptedConnections, 1, "hops reuse the connection")
    }

    func testPOSTBecomesGETOn302And303() throws {
        for status in [301, 302, 303] {
            server.clearLog()
            var request = request("/redirect/1?status=\(status)", method: "POST")
            request.httpBody = Data("payload".utf8)
            request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
            XCTAssertTrue(run(request).1.isSuccess)
            let second = try XCTUnwrap(server.requests.last)
            XCTAssertEqual(second.method, "GET", "status \(status)")
            XCTAssertEqual(second.body, Data())
            XCTAssertNil(second.header("Content-Type"))
        }
    }

    func testPOSTKeepsMethodAndBodyOn307And308() throws {
        for status in [307, 308] {
            server.clearLog()
            var request = request("/redirect/1?status=\(status)", method: "POST")
            request.httpBody = Data("payload".utf8)
            XCTAssertTrue(run(request).1.isSuccess)
            let second = try XCTUnwrap(server.requests.last)
            XCTAssertEqual(second.method, "POST", "status \(status)")
            XCTAssertEqual(second.body, Data("payload".utf8))
        }
    }

    func testStreamBodyCannotBeResentOn307() {
        var request = request("/redirect/1?status=307", method: "POST")
        request.httpBodyStream = InputStream(data: Data("payload".utf8))
        let (_, outcome) = run(request)
        XCTAssertEqual(outcome.urlErrorCode, .requestBodyStreamExhausted)
    }

    func testCredentialsAndCookiesStayWithTheirOrigin() throws {
        // 127.0.0.1 and localhost are different origins on the same server.
        let target = "http://localhost:\(server.port)/echo"
        var request = request("/redirect-to?url=\(target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
        request.setValue("Basic c2VjcmV0", forHTTPHeaderField: "Authorization")
        // Reached directly, a proxy login the app wrote as a header is read by the origin itself.
        request.setValue("Basic cHJveHk6c2VjcmV0", forHTTPHeaderField: "Proxy-Authorization")
        request.setValue("session=1", forHTTPHeaderField: "Cookie")
        request.setValue("kept", forHTTPHeaderField: "X-Other")
        XCTAssertTrue(run(request).1.isSuccess)
        XCTAssertEqual(server.requests.count, 2)
        XCTAssertEqual(server.requests[0].header("Authorization"), "Basic c2VjcmV0")
        XCTAssertEqual(server.requests[0].header("Proxy-Authorization"), "Basic cHJveHk6c2VjcmV0")
        XCTAssertNil(server.requests[1].header("Authorization"))
        XCTAssertNil(server.requests[1].header("Proxy-Authorization"))
        XCTAssertNil(server.requests[1].header("Cookie"))
        XCTAssertEqual(server.requests[1].header("X-Other"), "kept")
        XCTAssertEqual(server.requests[1].header("Host"), "localhost:\(server.port)")
    }

    func testSameOriginKeepsAuthorization() {
        var request = request("/redirect/1")
        request.setValue("Basic c2VjcmV0", forHTTPHeaderField: "Authorization")
        request.setValue("Basic cHJveHk6c2VjcmV0", forHTTPHeaderField: "Proxy-Authorization")
        XCTAssertTrue(run(request).1.isSuccess)
        XCTAssertEqual(server.requests.last?.header("Authorization"), "Basic c2VjcmV0")
        XCTAssertEqual(server.requests.last?.header("Proxy-Authorization"), "Basic cHJveHk6c2VjcmV0")
    }

    func testLoopEndsWithTooManyRedirects() {
        let (_, outcome) = run(request("/redirect-loop"))
        XCTAssertEqual(outcome.urlErrorCode, .httpTooManyRedirects)
        XCTAssertEqual(server.requests.count, 17, "the first request and 16 hops")
    }

    func testRedirectBlockCanStopAndDeliverThe3xx() throws {
        let operation = HTTPRequestOperation(request: request("/redirect/2"))
        let seen = Recorder<String>()
        operation.setRedirectResponseBlock { _, request, response in
            seen.append("\((response as? HTTPURLResponse)?.statusCode ?? 0) \(request.url?.path ?? "")")
            return nil
        }
        operation.responseSerializer.acceptableStatusCodes = nil
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(seen.all, ["302 /redirect/1"])
        XCTAssertEqual(operation.response?.statusCode, 302)
        XCTAssertEqual(server.requests.count, 1)
    }

    func testRedirectBlockCanRewriteTheRequest() throws {
        let operation = HTTPRequestOperation(request: request("/redirect/1"))
        let target = server.url("/echo?rewritten=1")
        operation.setRedirectResponseBlock { _, request, _ in
            var changed = request
            changed.url = target
            changed.setValue("1", forHTTPHeaderField: "X-Rewritten")
            return changed
        }
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(server.requests.last?.uri, "/echo?rewritten=1")
        XCTAssertEqual(server.requests.last?.header("X-Rewritten"), "1")
    }

    func testRedirectToUnsupportedSchemeFails() {
        let (_, outcome) = run(request("/redirect-to?url=ftp%3A%2F%2Fexample.com%2Ffile"))
        XCTAssertEqual(outcome.urlErrorCode, .unsupportedURL)
    }

    func testRedirectRequestRulesWithoutNetwork() throws {
        var post = URLRequest(url: try XCTUnwrap(URL(string: "http://a.example/x")))
        post.httpMethod = "POST"
        post.httpBody = Data("b".utf8)
        let target = try XCTUnwrap(URL(string: "http://a.example/y"))
        XCTAssertEqual(Transfer.redirectedRequest(from: post, to: target, status: 302, bodyIsReplayable: true)?.httpMethod, "GET")
        XCTAssertEqual(Transfer.redirectedRequest(from: post, to: target, status: 308, bodyIsReplayable: true)?.httpMethod, "POST")
        var head = post
        head.httpMethod = "HEAD"
        XCTAssertEqual(Transfer.redirectedRequest(from: head, to: target, status: 303, bodyIsReplayable: true)?.httpMethod, "HEAD")
        var put = post
        put.httpMethod = "PUT"
        XCTAssertEqual(Transfer.redirectedRequest(from: put, to: target, status: 302, bodyIsReplayable: true)?.httpMethod, "PUT")
        XCTAssertTrue(Transfer.sameOrigin(URL(string: "http://a.example/"), URL(string: "HTTP://A.example:80/z")))
        XCTAssertFalse(Transfer.sameOrigin(URL(string: "http://a.example/"), URL(string: "https://a.example/")))
    }
}
