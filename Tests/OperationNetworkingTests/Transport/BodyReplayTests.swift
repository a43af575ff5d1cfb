import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A request body streamed from a file goes out whole a second time after a `307` or an answered
/// `401`: a body the library can make again (multipart from files) is made again, and a stream of
/// the caller's is asked for anew through `setNeedNewBodyStreamBlock`, after the redirect or
/// challenge block decided.
final class BodyReplayTests: TemporaryDirectoryTestCase {
    /// 200 KB of a pattern no other test sends, in a file of its own.
    private func bodyFile() throws -> (URL, Data) {
        let body = Data((0..<200_000).map { (index: Int) -> UInt8 in UInt8(truncatingIfNeeded: index * 7 + index / 251) })
        let file = directory.appendingPathComponent("body.bin")
        try body.write(to: file)
        return (file, body)
    }

    /// A PUT of `file` streamed as the caller's own stream to `path`, with the block answering a new
    /// stream of the same file; the number of times the block was asked.
    private func putFile(_ file: URL, to path: String, credential: URLCredential? = nil,
                         withBlock: Bool = true) -> (Outcome, Int, Int) {
        var request = request(path, method: "PUT")
        request.httpBodyStream = InputStream(url: file)
        let operation = HTTPRequestOperation(request: request)
        operation.credential = credential
        let asked = Recorder<String>()
        let redirects = Recorder<String>()
        operation.setRedirectResponseBlock { _, next, _ in
            redirects.append(next.url?.path ?? "?")
            return next
        }
        if withBlock {
            operation.setNeedNewBodyStreamBlock { _, next in
                asked.append(next.url?.path ?? "?")
                return InputStream(url: file)
            }
        }
        return (run(operation), asked.all.count, redirects.all.count)
    }

    func testAFilePutIsSentWholeAgainAfterA307() throws {
        let (file, body) = try bodyFile()
        let (outcome, asked, redirects) = putFile(file, to: "/redirect-to?url=/echo&status=307")
        XCTAssertNil(outcome.error)
        XCTAssertEqual(asked, 1, "the block was asked once, for the redirect")
        XCTAssertEqual(redirects, 1, "the redirect block decided first")
        XCTAssertEqual(server.requests(path: "/redirect-to").map(\.body), [body], "the first hop carried the whole file")
        XCTAssertEqual(server.requests(path: "/echo").map(\.body), [body], "the redirected hop carried it again")
        XCTAssertEqual(server.requests(path: "/echo").first?.method, "PUT")
    }

    func testAFilePutIsSentWholeAgainAfterAnAnswered401() throws {
        let (file, body) = try bodyFile()
        let credential = URLCredential(user: "ada", password: "secret", persistence: .none)
        let (outcome, asked, _) = putFile(file, to: "/auth/basic/ada/secret", credential: credential)
        XCTAssertNil(outcome.error)
        XCTAssertEqual(asked, 1, "the block was asked once, for the answer")
        let received = server.requests(path: "/auth/basic/ada/secret")
        XCTAssertEqual(received.count, 2, "the challenged request and its answer")
        XCTAssertEqual(received.map(\.body), [body, body], "both carried the whole file")
    }

    func testWithoutTheBlockTheRedirectFailsAfterTheRedirectBlockDecided() throws {
        let (file, _) = try bodyFile()
        let (outcome, _, redirects) = putFile(file, to: "/redirect-to?url=/echo&status=308", withBlock: false)
        XCTAssertEqual(outcome.urlErrorCode, .requestBodyStreamExhausted)
        XCTAssertEqual(redirects, 1, "the redirect block was consulted before failing")
        XCTAssertEqual(server.requests(path: "/echo").count, 0)
    }

    func testAMultipartBodyFromAFileIsMadeAgainAfterA307WithoutTheBlock() throws {
        let (file, body) = try bodyFile()
        let serializer = HTTPRequestSerializer()
        var request = try serializer.multipartFormRequest(
            method: "PUT", urlString: server.url("/redirect-to?url=/echo&status=307").absoluteString,
            parameters: nil) { form in try form.appendPart(withFileURL: file, name: "file") }
        request.timeoutInterval = 10
        let outcome = run(HTTPRequestOperation(request: request))
        XCTAssertNil(outcome.error)
        let first = try XCTUnwrap(server.requests(path: "/redirect-to").first?.body)
        XCTAssertNotNil(first.range(of: body), "the first hop carried the file")
        XCTAssertEqual(server.requests(path: "/echo").map(\.body), [first], "the redirected hop carried the same body")
    }
}
