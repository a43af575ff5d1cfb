import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `curlDescription`'s `-H` options are the header fields the library sends: for the request of each
/// serializer, with a cookie in the storage and a credential, the fields the test server received are
/// compared with those the unredacted description names. Apart from them the server may only have
/// received what libcurl adds itself, as the description's documentation lists (`libcurlsOwn`).
final class CurlDescriptionWireTests: ServerTestCase {
    /// The name of the cookie this test stored for the test server.
    private var cookieName = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        cookieName = "wire\(UInt32.random(in: 0...UInt32.max))"
        let cookie = try XCTUnwrap(HTTPCookie(properties: [.name: cookieName, .value: "c00kie",
                                                           .domain: server.baseURL.host ?? "127.0.0.1", .path: "/"]))
        HTTPCookieStorage.shared.setCookie(cookie)
    }

    override func tearDown() {
        let storage = HTTPCookieStorage.shared
        storage.cookies?.filter { $0.name == cookieName }.forEach(storage.deleteCookie)
        super.tearDown()
    }

    // MARK: - Reading the description

    /// The arguments of every `option '…'` in `command`, unquoted as a POSIX shell does: inside single
    /// quotes everything is literal, and `'\''` continues the word with a quote.
    private func arguments(of option: String, in command: String) -> [String] {
        var found: [String] = []
        var rest = Substring(command)
        while let start = rest.range(of: "\(option) '") {
            rest = rest[start.upperBound...]
            var word = ""
            while let close = rest.firstIndex(of: "'") {
                word += rest[..<close]
                rest = rest[rest.index(after: close)...]
                guard rest.hasPrefix("\\''") else { break }
                word += "'"
                rest = rest.dropFirst(3)
            }
            found.append(word)
        }
        return found
    }

    /// The description's `-H` lines: the fields it sends (names lowercased) and the names it removes
    /// (`Name:`); `Name;` is a field with an empty value.
    private func describedFields(_ command: String) -> (sent: [String: String], removed: Set<String>) {
        var sent: [String: String] = [:]
        var removed: Set<String> = []
        for line in arguments(of: "-H", in: command) {
            guard let colon = line.firstIndex(of: ":") else {
                XCTAssertTrue(line.hasSuffix(";"), "not a header line: \(line)")
                sent[line.dropLast().lowercased()] = ""
                continue
            }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...]
            if value.isEmpty { removed.insert(name) } else { sent[name] = String(value.dropFirst()) }   // ": value"
        }
        return (sent, removed)
    }

    // MARK: - The comparison

    /// Runs `operation`, then asserts for every request the server received that its fields are those
    /// its description names, apart from `libcurlsOwn`. Returns the requests.
    @discardableResult
    private func assertSentAsDescribed(_ operation: HTTPRequestOperation,
                                       file: StaticString = #filePath, line: UInt = #line) throws -> [RecordedRequest] {
        server.clearLog()
        let command = operation.curlDescription(redactingSecrets: false)
        let described = describedFields(command)
        run(operation)
        let received = server.requests
        XCTAssertFalse(received.isEmpty, "the library sent nothing:\n\(command)", file: file, line: line)
        for request in received {
            var fields: [String: String] = [:]
            for (name, value) in request.headers {
                XCTAssertNil(fields.updateValue(value, forKey: name.lowercased()), "\(name) twice", file: file, line: line)
            }
            for (name, value) in fields where described.sent[name] == nil {
                XCTAssertTrue(libcurlsOwn(name, value, in: request, command: command),
                              "received \(name): \(value), which the description does not show:\n\(command)",
                              file: file, line: line)
            }
            for (name, value) in described.sent {
                XCTAssertEqual(fields[name], value, "\(name):\n\(command)", file: file, line: line)
            }
            for name in described.removed {
                XCTAssertNil(fields[name], "\(name) is removed by the description:\n\(command)", file: file, line: line)
            }
        }
        return received
    }

    /// Whether a field the description does not name is one libcurl adds itself, as the description's
    /// documentation says: `Host`, `Accept: */*`, the length of a body it sends (a POST's, if empty, or
    /// any that arrived; never a length of a request without a body), and the `Basic` answer of the
    /// credential the description's `--user` names.
    private func libcurlsOwn(_ name: String, _ value: String, in request: RecordedRequest, command: String) -> Bool {
        switch name {
        case "host": return value == "\(server.baseURL.host ?? ""):\(server.port)"
        case "accept": return value == "*/*"
        case "content-length":
            let sendsBody = ["POST", "PUT", "PATCH"].contains(request.method) || !request.body.isEmpty
            return sendsBody && value == String(request.body.count)
        case "authorization":
            return arguments(of: "--user", in: command).contains { value == "Basic " + Data($0.utf8).base64EncodedString() }
        default: return false
        }
    }

    /// `request` run by an operation, answered 200.
    private func assertAnswered(_ request: URLRequest, file: StaticString = #filePath, line: UInt = #line) throws {
        let operation = HTTPRequestOperation(request: request)
        try assertSentAsDescribed(operation, file: file, line: line)
        XCTAssertEqual(operation.response?.statusCode, 200, file: file, line: line)
        let sent = try XCTUnwrap(server.requests.last, file: file, line: line)
        // Among the others the shared storage may hold (other tests' cookies are sent and described too).
        let cookies = (sent.header("Cookie") ?? "").components(separatedBy: "; ")
        XCTAssertTrue(cookies.contains("\(cookieName)=c00kie"), "the storage's cookie went: \(cookies)", file: file, line: line)
    }

    // MARK: - Tests

    func testEverySerializersRequestCarriesTheFieldsItsDescriptionShows() throws {
        let url = server.url("auth/basic/ada/s3cret").absoluteString
        let serializers: [HTTPRequestSerializer] = [HTTPRequestSerializer(), JSONRequestSerializer(),
                                                    PropertyListRequestSerializer()]
        for serializer in serializers {
            // Basic authentication sent up front: the route answers 200 only to it.
            serializer.setAuthorizationHeaderField(username: "ada", password: "s3cret")
            serializer.setValue("it's \"quoted\" $HOME", forHTTPHeaderField: "X-Note")
            try assertAnswered(try serializer.request(method: "GET", urlString: url, parameters: ["q": "a b&c"]))
            let posted = try serializer.request(method: "POST", urlString: url, parameters: ["name": "ada", "n": 1])
            XCTAssertNotNil(posted.httpBody, "\(type(of: serializer)) wrote a body")
            try assertAnswered(posted)
            XCTAssertEqual(server.requests.last?.body, posted.httpBody)
        }
        let multipart = HTTPRequestSerializer()
        multipart.setAuthorizationHeaderField(username: "ada", password: "s3cret")
        let form = try multipart.multipartFormRequest(method: "POST", urlString: url, parameters: ["a": "b"]) { form in
            form.appendPart(withFileData: Data(count: 1000), name: "f", fileName: "f.bin", mimeType: "application/octet-stream")
        }
        XCTAssertNotNil(form.httpBodyStream, "a multipart body is a stream")
        try assertAnswered(form)
        XCTAssertNil(server.requests.last?.header("Expect"), "the description removes it, and it was not sent")
    }

    func testTheCredentialTheDescriptionShowsAnswersTheChallenge() throws {
        let operation = HTTPRequestOperation(request: try HTTPRequestSerializer().request(
            method: "GET", urlString: server.url("auth/basic/ada/it's$x").absoluteString, parameters: nil))
        operation.credential = URLCredential(user: "ada", password: "it's$x", persistence: .none)
        let received = try assertSentAsDescribed(operation)
        XCTAssertEqual(received.count, 2, "a challenge, then its answer")
        XCTAssertNil(received.first?.header("Authorization"))
        XCTAssertNotNil(received.last?.header("Authorization"), "the answer, made of the description's --user")
        XCTAssertEqual(operation.response?.statusCode, 200)
    }

    /// A field a request without a body carries goes as it is, `Content-Length` included (libcurl
    /// computes it only for a body it sends); the description shows it too.
    func testTheFieldsOfARequestWithoutABodyAreShownAsSent() throws {
        let serializer = HTTPRequestSerializer()
        serializer.setValue("0", forHTTPHeaderField: "Content-Length")
        serializer.setValue("", forHTTPHeaderField: "X-Empty")
        for method in ["GET", "HEAD", "DELETE"] {
            let request = try serializer.request(method: method, urlString: server.url("echo").absoluteString,
                                                 parameters: ["m": method])
            XCTAssertNil(request.httpBody, method)
            try assertAnswered(request)
            XCTAssertEqual(server.requests.last?.header("Content-Length"), "0", method)
        }
    }
}
