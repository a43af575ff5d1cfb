import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// The network thread keeps easy handles configured between plain GETs and wakes only when parked:
/// neither may change what goes on the wire or delay a request.
final class HandleReuseTests: ServerTestCase {
    /// Requests run one after another, so each reuses the handle the previous one left in the pool.
    func testAReusedHandleCarriesNothingFromThePreviousRequest() throws {
        var first = request("/echo")
        first.setValue("1", forHTTPHeaderField: "X-First")
        XCTAssertTrue(run(first).1.isSuccess)
        var second = request("/echo")
        second.setValue("2", forHTTPHeaderField: "X-Second")
        XCTAssertTrue(run(second).1.isSuccess)
        var post = request("/echo", method: "POST")
        post.httpBody = Data("abc".utf8)
        XCTAssertTrue(run(post).1.isSuccess)
        XCTAssertTrue(run(request("/echo")).1.isSuccess)
        var identity = request("/echo")
        identity.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        XCTAssertTrue(run(identity).1.isSuccess)
        XCTAssertTrue(run(request("/echo")).1.isSuccess)
        let authenticated = HTTPRequestOperation(request: request("/auth/basic/user/secret"))
        authenticated.credential = URLCredential(user: "user", password: "secret", persistence: .none)
        XCTAssertTrue(run(authenticated).isSuccess)
        XCTAssertTrue(run(request("/echo", method: "HEAD")).1.isSuccess)
        let (last, outcome) = run(request("/echo"))
        XCTAssertTrue(outcome.isSuccess)

        let logged = server.requests(path: "/echo")
        XCTAssertEqual(logged.map(\.method), ["GET", "GET", "POST", "GET", "GET", "GET", "HEAD", "GET"])
        XCTAssertEqual(logged[0].header("X-First"), "1")
        XCTAssertNil(logged[1].header("X-First"), "a header of the previous request leaked")
        XCTAssertEqual(logged[1].header("X-Second"), "2")
        XCTAssertEqual(logged[2].body, Data("abc".utf8))
        XCTAssertEqual(logged[3].body, Data(), "the GET after a POST sent a body")
        XCTAssertNil(logged[3].header("Content-Length"))
        XCTAssertNil(logged[3].header("X-Second"))
        XCTAssertEqual(logged[4].header("Accept-Encoding"), "identity")
        XCTAssertNotEqual(logged[5].header("Accept-Encoding"), "identity")
        XCTAssertNotNil(logged[5].header("Accept-Encoding"), "the library's encodings are offered again")
        XCTAssertNil(logged[7].header("Authorization"), "a credential of an earlier request was sent")
        XCTAssertFalse(last.responseData?.isEmpty ?? true, "the GET after a HEAD has a body")
    }

    /// Requests with an in-memory body keep the handle configured for their method too: each one must
    /// still send its own body and length, never the previous request's.
    func testAReusedHandleSendsEachRequestsOwnBody() throws {
        let bodies: [(method: String, body: Data)] = [
            ("POST", deterministicBytes(1_000)), ("POST", deterministicBytes(70_000)), ("POST", Data()),
            ("POST", Data("fourth".utf8)), ("PUT", Data("put".utf8)), ("PUT", Data("put again".utf8)),
        ]
        for (method, body) in bodies {
            var upload = request("/echo", method: method)
            upload.httpBody = body
            upload.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            XCTAssertTrue(run(upload).1.isSuccess)
        }
        XCTAssertTrue(run(request("/echo")).1.isSuccess)
        var last = request("/echo", method: "POST")
        last.httpBody = Data("after a GET".utf8)
        XCTAssertTrue(run(last).1.isSuccess)

        let logged = server.requests(path: "/echo")
        let expected = bodies + [("GET", Data()), ("POST", Data("after a GET".utf8))]
        XCTAssertEqual(logged.map(\.method), expected.map(\.method))
        for (index, (sent, wanted)) in zip(logged, expected).enumerated() {
            XCTAssertEqual(sent.body, wanted.body, "request \(index) carried another body")
            if wanted.method != "GET" {
                XCTAssertEqual(sent.header("Content-Length"), "\(wanted.body.count)", "request \(index)")
            }
        }
        XCTAssertNil(logged[6].header("Content-Length"), "the GET after the uploads sent a length")
    }

    /// Requests with equal fields one after another on recycled handles: every request sends its own
    /// values, its body's length and no `Expect`.
    func testRequestsWithEqualFieldsStillSendTheirOwnHead() throws {
        func make(_ method: String, _ fields: [String: String], body: String? = nil) -> URLRequest {
            var made = request("/echo", method: method)
            for (name, value) in fields { made.setValue(value, forHTTPHeaderField: name) }
            made.httpBody = body.map { Data($0.utf8) }
            return made
        }
        let one = ["X-Id": "1", "X-Tag": "t"], two = ["X-Id": "2", "X-Tag": "t"]
        var stale = two
        stale["Content-Length"] = "999"
        let sequence = [
            make("GET", one), make("GET", one), make("GET", two),
            make("POST", two, body: "hello"),   // equal fields, but now with a body
            make("POST", stale, body: "hello, again"), make("POST", stale, body: "third"),
            make("GET", two.merging(["Accept-Encoding": "identity"]) { $1 }), make("GET", two), make("GET", two),
        ]
        for (index, request) in sequence.enumerated() {
            XCTAssertTrue(run(request).1.isSuccess, "request \(index)")
        }

        let logged = server.requests(path: "/echo")
        XCTAssertEqual(logged.map(\.method), sequence.map { $0.httpMethod ?? "GET" })
        XCTAssertEqual(logged.map { $0.header("X-Id") }, ["1", "1", "2", "2", "2", "2", "2", "2", "2"])
        XCTAssertEqual(logged.map { $0.header("X-Tag") }, Array(repeating: "t", count: 9))
        XCTAssertEqual(logged.map { $0.header("Expect") }, Array(repeating: nil, count: 9),
                       "a body went out with curl's Expect: 100-continue")
        XCTAssertEqual(logged[3...5].map(\.body), [Data("hello".utf8), Data("hello, again".utf8), Data("third".utf8)])
        XCTAssertEqual(logged[3...5].map { $0.header("Content-Length") }, ["5", "12", "5"],
                       "a caller's stale Content-Length went out")
        XCTAssertEqual(logged[6].header("Accept-Encoding"), "identity")
        for index in [0, 1, 2, 7, 8] {
            XCTAssertEqual(logged[index].header("Accept-Encoding"), Transfer.offeredEncodings, "request \(index)")
            XCTAssertNil(logged[index].header("Content-Length"), "request \(index)")
        }
    }

    /// Two spellings of one text (precomposed and decomposed é) are equal `String`s, but not the same
    /// bytes: each request must send its own.
    func testEquivalentButDifferentValuesAreSentAsTheirOwnBytes() throws {
        let precomposed = "caf\u{E9}", decomposed = "cafe\u{301}"
        XCTAssertEqual(precomposed, decomposed)
        for value in [precomposed, decomposed, decomposed, precomposed] {
            var made = request("/echo")
            made.setValue(value, forHTTPHeaderField: "X-Name")
            XCTAssertTrue(run(made).1.isSuccess)
        }
        let sent = server.requests(path: "/echo").map { Array(($0.header("X-Name") ?? "").utf8) }
        XCTAssertEqual(sent, [precomposed, decomposed, decomposed, precomposed].map { Array($0.utf8) })
    }

    /// libcurl refuses a new receive-buffer size on a handle whose last transfer failed (it still holds
    /// its buffer); the next request on that handle must go out all the same.
    func testAHandleWhoseTransferFailedServesTheNextRequest() throws {
        let unresolvable = try XCTUnwrap(URL(string: "http://onet-unresolvable.invalid:9/"))
        for round in 0..<3 {
            XCTAssertEqual(run(URLRequest(url: unresolvable)).1.urlErrorCode, .cannotFindHost)
            // HEAD is configured from a reset handle: the pool hands back the one that just failed.
            XCTAssertTrue(run(request("/echo", method: "HEAD")).1.isSuccess, "round \(round)")
        }
        XCTAssertEqual(server.requests(path: "/echo").map(\.method), ["HEAD", "HEAD", "HEAD"])
    }

    /// A lost wake-up would leave a request waiting for the idle poll (a second) each time.
    func testAParkedNetworkThreadTakesANewRequestAtOnce() {
        for _ in 0..<5 {
            XCTAssertTrue(eventually { NetworkThread.shared.isParked })
            let operation = HTTPRequestOperation(request: request("/echo"))
            let (done, box) = recordOutcome(of: operation)
            operation.start()
            wait(for: [done], timeout: 0.8)   // under the 1 s idle poll a lost wake-up would cost
            XCTAssertTrue(box.value?.isSuccess ?? false)
        }
    }
}
