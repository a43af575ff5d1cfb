import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A user name and password written in a URL work in their process only: no archive of an operation
/// (request URL, response URL, error text) or of a manager (base URL) holds them, byte for byte, and
/// the restored objects use the URL without them.
final class ArchivedUserInfoTests: ServerTestCase {
    static let user = "archive-user-name"
    static let password = "archive-pass-word"
    static let proxyUser = "proxy-user-name"
    static let proxyPassword = "proxy-pass-word"

    /// `url` with `user:password@` written into its authority.
    private func withUserInfo(_ url: URL, user: String = user, password: String = password) throws -> URL {
        var components = try XCTUnwrap(URLComponents(url: url, resolvingAgainstBaseURL: true))
        components.user = user
        components.password = password
        return try XCTUnwrap(components.url)
    }

    /// Fails for each of `secrets` found in `archive`, as UTF-8 or UTF-16 (a binary property list
    /// keeps a string in either).
    private func assertHolds(none secrets: [String], in archive: Data, _ what: String,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        for secret in secrets {
            XCTAssertNil(archive.range(of: Data(secret.utf8)), "\(secret) in \(what)", file: file, line: line)
            for encoding in [String.Encoding.utf16BigEndian, .utf16LittleEndian] {
                let bytes = try XCTUnwrap(secret.data(using: encoding))
                XCTAssertNil(archive.range(of: bytes), "\(secret) in \(what) (UTF-16)", file: file, line: line)
            }
        }
    }

    /// A finished operation (request and response URL archived) and a ready one: neither archive holds
    /// the URL's user or password; the restored request is the URL without them and still runs.
    func testAnOperationsArchiveHoldsNoUserInfoAndRestoresWithoutIt() throws {
        let bare = server.url("/echo")
        let finished = HTTPRequestOperation(request: URLRequest(url: try withUserInfo(bare)))
        XCTAssertTrue(run(finished).isSuccess)
        let sent = try XCTUnwrap(server.requests.first?.header("Authorization"), "the URL's login works in its process")
        XCTAssertEqual(sent, "Basic " + Data("\(Self.user):\(Self.password)".utf8).base64EncodedString())
        XCTAssertNotNil(finished.response?.url, "a response URL is archived too")
        let finishedArchive = try SafeArchive.archive(finished)
        try assertHolds(none: [Self.user, Self.password], in: finishedArchive, "the finished operation's archive")
        let restoredFinished = try SafeArchive.unarchive(HTTPRequestOperation.self, from: finishedArchive)
        XCTAssertEqual(restoredFinished.request.url, bare)
        XCTAssertEqual(restoredFinished.response?.url, bare)

        let ready = HTTPRequestOperation(request: URLRequest(url: try withUserInfo(bare)))
        let readyArchive = try SafeArchive.archive(ready)
        try assertHolds(none: [Self.user, Self.password], in: readyArchive, "the ready operation's archive")
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: readyArchive)
        XCTAssertEqual(restored.request.url, bare, "restored without the user and password")
        server.clearLog()
        XCTAssertTrue(run(restored).isSuccess, "the restored operation still runs")
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertNil(server.requests.first?.header("Authorization"), "the password stayed in the first process")
    }

    /// A failed operation's archived error text names no proxy login: the library's message quotes the
    /// proxy URL as it was written.
    func testAnArchivedErrorDescriptionHoldsNoUserInfo() throws {
        let proxy = try XCTUnwrap(URL(string: "ftp://\(Self.proxyUser):\(Self.proxyPassword)@127.0.0.1:9/"))
        let operation = HTTPRequestOperation(request: URLRequest(url: try withUserInfo(server.url("/echo"))))
        operation.proxy = .proxy(proxy, bypass: [])
        guard case .failure(let error) = run(operation) else { return XCTFail("an ftp proxy is refused") }
        XCTAssertTrue(error.localizedDescription.contains("\(Self.proxyUser):\(Self.proxyPassword)@"),
                      "the message quotes the proxy URL, login and all: \(error.localizedDescription)")
        let archive = try SafeArchive.archive(operation)
        try assertHolds(none: [Self.user, Self.password, Self.proxyUser, Self.proxyPassword], in: archive,
                        "the failed operation's archive")
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive)
        XCTAssertTrue(restored.error?.localizedDescription.contains("ftp://127.0.0.1:9/") == true,
                      restored.error?.localizedDescription ?? "no error restored")
    }

    /// A manager's base URL is archived without its user and password; the restored manager's base URL
    /// is the URL without them, and its requests go to the same server.
    func testAManagersBaseURLIsArchivedWithoutUserInfo() throws {
        let manager = HTTPRequestOperationManager(baseURL: try withUserInfo(server.baseURL))
        let archive = try SafeArchive.archive(manager)
        try assertHolds(none: [Self.user, Self.password], in: archive, "the manager's archive")
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: archive)
        XCTAssertEqual(restored.baseURL?.absoluteString, server.baseURL.absoluteString)
        XCTAssertNil(restored.baseURL?.user)
        let url = try XCTUnwrap(URL(string: "echo", relativeTo: restored.baseURL)?.absoluteURL)
        XCTAssertTrue(run(URLRequest(url: url)).1.isSuccess)
        XCTAssertEqual(server.requests.last?.path, "/echo")
        XCTAssertNil(server.requests.last?.header("Authorization"))
    }

    /// The text fallback, for a URL `URLComponents` would not take apart: the authority's user
    /// information goes, an `@` in the path, query or fragment stays.
    func testTheTextFallbackCutsOnlyTheAuthoritysUserInfo() {
        XCTAssertEqual(URL.removingUserInfo(fromText: "http://u:p@h:8/a@b?c@d#e@f"), "http://h:8/a@b?c@d#e@f")
        XCTAssertEqual(URL.removingUserInfo(fromText: "http://u%40x:p@h/"), "http://h/")
        XCTAssertEqual(URL.removingUserInfo(fromText: "http://h/a@b"), "http://h/a@b")
        XCTAssertEqual(URL.removingUserInfo(fromText: "mailto:u@h"), "mailto:u@h")
        XCTAssertEqual(URL.removingUserInfo(inText: "The proxy ftp://u:p@h:9/ failed at\thttp://a@b/."),
                       "The proxy ftp://h:9/ failed at\thttp://b/.")
    }
}
