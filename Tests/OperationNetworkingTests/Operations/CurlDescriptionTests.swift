import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `curlDescription`: the command is run by `/bin/sh` against the test server, which must record the
/// same request as the one the library sends.
final class CurlDescriptionTests: ServerTestCase {
    /// Runs `command` with `/bin/sh -c`, its output discarded; returns the exit status.
    private func runShell(_ command: String) throws -> Int32 {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") || FileManager.default.isExecutableFile(atPath: "/bin/curl") else {
            throw XCTSkip("the curl command line tool is not installed (scripts/setup installs it)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        if command.utf8.count > 100_000 {
            // One exec argument may not exceed 128 KiB on Linux: a long command goes in as a script.
            let script = FileManager.default.temporaryDirectory.appendingPathComponent("curl-\(UUID().uuidString).sh")
            try Data(command.utf8).write(to: script)
            addTeardownBlock { try? FileManager.default.removeItem(at: script) }
            process.arguments = [script.path]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Headers as a sorted list of `name: value` lines, names lower-cased.
    private func headerLines(_ request: RecordedRequest) -> [String] {
        request.headers.map { "\($0.name.lowercased()): \($0.value)" }.sorted()
    }

    /// Sends `request` with the library and with its unredacted description; asserts the server saw
    /// the same method, target, headers and body. Returns the description.
    @discardableResult
    private func assertSameOnTheWire(_ request: URLRequest, credential: URLCredential? = nil,
                                     configure: (HTTPRequestOperation) -> Void = { _ in },
                                     file: StaticString = #filePath, line: UInt = #line) throws -> String {
        server.clearLog()
        let operation = HTTPRequestOperation(request: request)
        operation.credential = credential
        configure(operation)
        let command = operation.curlDescription(redactingSecrets: false)
        _ = run(operation)
        let fromLibrary = server.requests
        XCTAssertFalse(fromLibrary.isEmpty, "the library sent nothing:\n\(command)", file: file, line: line)
        server.clearLog()
        XCTAssertEqual(try runShell(command), 0, "sh failed to run:\n\(command)", file: file, line: line)
        let fromCurl = server.requests
        XCTAssertEqual(fromCurl.count, fromLibrary.count, "requests sent:\n\(command)", file: file, line: line)
        for (library, curl) in zip(fromLibrary, fromCurl) {
            XCTAssertEqual(curl.method, library.method, command, file: file, line: line)
            XCTAssertEqual(curl.uri, library.uri, command, file: file, line: line)
            XCTAssertEqual(headerLines(curl), headerLines(library), command, file: file, line: line)
            XCTAssertEqual(curl.body, library.body, command, file: file, line: line)
        }
        return command
    }

    func testAGETWithTheSerializersDefaultsAndAQuerySendsTheSameRequest() throws {
        let serializer = HTTPRequestSerializer()
        serializer.setValue("Bearer t0ken", forHTTPHeaderField: "Authorization")
        var request = try serializer.request(method: "GET", urlString: server.url("echo").absoluteString,
                                             parameters: ["q": "a b&c", "list": [1, 2]])
        request.setValue("", forHTTPHeaderField: "X-Empty")
        request.setValue("flavour=chocolate", forHTTPHeaderField: "Cookie")
        let command = try assertSameOnTheWire(request)
        XCTAssertTrue(command.contains("--compressed"), command)
        XCTAssertNotNil(request.value(forHTTPHeaderField: "User-Agent"), "the serializer's default must be in the request")
        XCTAssertTrue(command.contains("User-Agent: "), command)
        XCTAssertTrue(command.contains("--globoff") == command.contains("["), command)
    }

    func testTextBodiesWithQuotesDollarsBackquotesAndNewlinesSurviveTheShell() throws {
        let text = "it's \"quoted\" $HOME ${PATH} `id` $(id) \\ back\\slash\nsecond line\n\ttab 'again'"
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            var request = request("echo", method: method)
            request.httpBody = Data(text.utf8)
            request.setValue("text/plain; charset=utf-8", forHTTPHeaderField: "Content-Type")
            try assertSameOnTheWire(request)
        }
        // Through the serializer: a form body and its Content-Type.
        let form = try HTTPRequestSerializer().request(method: "POST", urlString: server.url("echo").absoluteString,
                                                       parameters: ["note": "it's $5 `now`"])
        let command = try assertSameOnTheWire(form)
        XCTAssertTrue(command.contains("--data-binary"), command)
        XCTAssertEqual(server.requests.first?.header("Content-Type"), form.value(forHTTPHeaderField: "Content-Type"))
    }

    func testALargeTextBodyIsPipedFromPrintfAndSentWithoutExpect() throws {
        var request = request("upload", method: "POST")
        request.httpBody = Data(String(repeating: "line with 'quotes' and $dollars\n", count: 50_000).utf8)   // 1.6 MB
        request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        let command = try assertSameOnTheWire(request)
        XCTAssertTrue(command.hasPrefix("printf '%s' '"), String(command.prefix(100)))
        XCTAssertNil(server.requests.first?.header("Expect"))
        XCTAssertEqual(server.requests.first?.body.count, request.httpBody?.count)
    }

    func testBodilessMethodsAndABinaryBodySendTheSameRequest() throws {
        for method in ["GET", "HEAD", "DELETE", "OPTIONS", "POST", "PUT"] {
            try assertSameOnTheWire(request("echo?m=\(method)", method: method))
        }
        var binary = request("echo", method: "PUT")
        binary.httpBody = Data((0...255).map { UInt8($0) } + [0, 0, 37, 37])   // NUL bytes and `%`
        let command = try assertSameOnTheWire(binary)
        XCTAssertTrue(command.hasPrefix("printf '"), command)
        XCTAssertEqual(server.requests.first?.body.count, 260)
    }

    func testACallerSetAcceptEncodingIsSentAsIsWithoutCompressed() throws {
        var request = request("gzip")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let command = try assertSameOnTheWire(request)
        XCTAssertFalse(command.contains("--compressed"), command)
    }

    func testTheCredentialAnswersTheChallengeLikeTheLibrary() throws {
        let credential = URLCredential(user: "ada", password: "it's$x", persistence: .none)
        let command = try assertSameOnTheWire(request("auth/basic/ada/it's$x"), credential: credential)
        XCTAssertEqual(server.requests.count, 2, "a challenge, then the answer")
        XCTAssertNotNil(server.requests.last?.header("Authorization"))
        XCTAssertTrue(command.contains("--anyauth"), command)
    }

    func testSecretsAreRedactedUnlessAskedFor() throws {
        var request = request("echo")
        request.setValue("Bearer SECRET-1", forHTTPHeaderField: "Authorization")
        request.setValue("Basic SECRET-2", forHTTPHeaderField: "Proxy-Authorization")
        request.setValue("session=SECRET-3", forHTTPHeaderField: "Cookie")
        request.setValue("visible", forHTTPHeaderField: "X-Plain")
        let operation = HTTPRequestOperation(request: request)
        operation.credential = URLCredential(user: "ada", password: "SECRET-4", persistence: .none)
        let redacted = operation.curlDescription
        XCTAssertFalse(redacted.contains("SECRET"), redacted)
        XCTAssertTrue(redacted.contains("-H 'Authorization: ***'"), redacted)
        XCTAssertTrue(redacted.contains("-H 'Proxy-Authorization: ***'"), redacted)
        XCTAssertTrue(redacted.contains("-H 'Cookie: ***'"), redacted)
        XCTAssertTrue(redacted.contains("--user 'ada:***'"), redacted)
        XCTAssertTrue(redacted.contains("-H 'X-Plain: visible'"), redacted)
        XCTAssertEqual(redacted, operation.curlDescription(redactingSecrets: true))
        let shown = operation.curlDescription(redactingSecrets: false)
        for secret in ["SECRET-1", "SECRET-2", "SECRET-3", "SECRET-4"] {
            XCTAssertTrue(shown.contains(secret), shown)
        }
    }

    func testAStreamBodyIsACommentNamingItsSize() throws {
        let request = try HTTPRequestSerializer().multipartFormRequest(
            method: "POST", urlString: server.url("upload").absoluteString, parameters: ["a": "b"],
            constructingBodyWith: { form in form.appendPart(withFileData: Data(count: 1000), name: "f",
                                                            fileName: "f.bin", mimeType: "application/octet-stream") })
        let length = try XCTUnwrap(request.value(forHTTPHeaderField: "Content-Length"))
        let command = HTTPRequestOperation(request: request).curlDescription
        XCTAssertTrue(command.hasPrefix("# The request body is a stream (\(length) bytes)"), command)
        XCTAssertFalse(command.contains("Content-Length"), command)
        XCTAssertEqual(try runShell(command), 0, command)
        XCTAssertEqual(server.requests.last?.header("Content-Type"), request.value(forHTTPHeaderField: "Content-Type"))
    }
}

// MARK: - The proxy

extension CurlDescriptionTests {
    private func squid(user: String? = nil, password: String? = nil) throws -> ExternalServer {
        let squid = try ExternalServer.squid(user: user, password: password)
        addTeardownBlock { squid.stop() }
        return squid
    }

    func testARequestThroughAnHTTPProxyGoesThroughItTheSameWay() throws {
        let squid = try self.squid()
        let proxy = try XCTUnwrap(URL(string: "http://127.0.0.1:\(squid.port)"))
        let command = try assertSameOnTheWire(request("echo?via=proxy")) { $0.proxy = .proxy(proxy) }
        XCTAssertTrue(command.contains("--proxy 'http://127.0.0.1:\(squid.port)'"), command)
        XCTAssertNotNil(server.requests.first?.header("Via"), "curl's request came through squid")
        squid.stop(keepingFiles: true)   // squid writes its log out when it stops
        // squid logs URLs without their query (strip_query_terms).
        XCTAssertEqual(squid.squidLog.filter { $0.contains("/echo") }.count, 2, "the library's and curl's")
    }

    func testTheProxyLoginIsSentLikeTheLibrarysAndRedacted() throws {
        let squid = try self.squid(user: "ada", password: "it's-L0velace")
        let plain = try XCTUnwrap(URL(string: "http://127.0.0.1:\(squid.port)"))
        let withUserInfo = try XCTUnwrap(URL(string: "http://ada:it's-L0velace@127.0.0.1:\(squid.port)"))
        let credential = URLCredential(user: "ada", password: "it's-L0velace", persistence: .none)
        let answered = try assertSameOnTheWire(request("echo?login=credential")) {
            $0.proxy = .proxy(plain)
            $0.proxyCredential = credential
        }
        XCTAssertTrue(answered.contains("--proxy-anyauth --proxy-user 'ada:it'\\''s-L0velace'"), answered)
        XCTAssertNotNil(server.requests.first?.header("Via"))
        let upFront = try assertSameOnTheWire(request("echo?login=url")) { $0.proxy = .proxy(withUserInfo) }
        XCTAssertTrue(upFront.contains("--proxy 'http://127.0.0.1:\(squid.port)'"), upFront)
        XCTAssertNotNil(server.requests.first?.header("Via"))

        let operation = HTTPRequestOperation(request: request("echo"))
        operation.proxy = .proxy(withUserInfo)
        XCTAssertFalse(operation.curlDescription.contains("L0velace"), operation.curlDescription)
        XCTAssertTrue(operation.curlDescription.contains("--proxy-user 'ada:***'"), operation.curlDescription)
        operation.proxyCredential = credential
        XCTAssertFalse(operation.curlDescription.contains("L0velace"), operation.curlDescription)
        XCTAssertTrue(operation.curlDescription.contains("--proxy-anyauth --proxy-user 'ada:***'"), operation.curlDescription)
    }

    func testTheBypassListAndDirectKeepCurlOffTheProxy() throws {
        let squid = try self.squid()
        let proxy = try XCTUnwrap(URL(string: "http://127.0.0.1:\(squid.port)"))
        let bypassed = try assertSameOnTheWire(request("echo?bypass=1")) { $0.proxy = .proxy(proxy, bypass: ["example.invalid", "127.0.0.1"]) }
        XCTAssertTrue(bypassed.contains("--noproxy 'example.invalid,127.0.0.1'"), bypassed)
        XCTAssertNil(server.requests.first?.header("Via"), "the bypass list sends curl straight to the server")
        // The environment names the proxy; .direct ignores it, and so must the command.
        setenv("http_proxy", proxy.absoluteString, 1)
        defer { unsetenv("http_proxy") }
        let direct = try assertSameOnTheWire(request("echo?direct=1")) { $0.proxy = .direct }
        XCTAssertTrue(direct.contains("--noproxy '*'"), direct)
        XCTAssertNil(server.requests.first?.header("Via"), ".direct sends curl straight to the server")
        squid.stop(keepingFiles: true)
        XCTAssertFalse(squid.squidLog.contains { $0.contains("/echo") }, squid.squidLog.joined(separator: "\n"))
    }

    func testARequestThroughASOCKS5ProxyLogsInAndGoesThroughIt() throws {
        let user = ExternalServer.socksUser(password: "s0cks-it's-5ecret")
        let dante = try ExternalServer.dante(user: user)
        addTeardownBlock { dante.stop() }
        let credential = URLCredential(user: user.name, password: user.password, persistence: .none)
        for scheme in ["socks5h", "socks5"] {
            let proxy = try XCTUnwrap(URL(string: "\(scheme)://127.0.0.1:\(dante.port)"))
            let relayed = { dante.danteLog.filter { $0.contains("tcp/connect [") && $0.contains("username%\(user.name)@") }.count }
            let before = relayed()
            let command = try assertSameOnTheWire(request("echo?scheme=\(scheme)")) {
                $0.proxy = .proxy(proxy)
                $0.proxyCredential = credential
            }
            let option = scheme == "socks5h" ? "--socks5-hostname" : "--socks5"
            XCTAssertTrue(command.contains("\(option) '127.0.0.1:\(dante.port)'"), command)
            XCTAssertTrue(command.contains("--proxy-user '\(user.name):s0cks-it'\\''s-5ecret'"), command)
            XCTAssertFalse(command.contains("--proxy-anyauth"), "a SOCKS5 login is sent up front: \(command)")
            XCTAssertEqual(relayed(), before + 2, "the library's and curl's request: \(dante.danteLog.joined(separator: "\n"))")
        }
    }
}
