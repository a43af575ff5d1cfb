import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Through a real squid forward proxy: HTTPS tunnels whose `CONNECT` answer is never taken for the
/// response, proxy authentication for http and https, the per-manager and per-operation setting.
final class ProxyTests: LibraryTestCase {
    private static let authority = Result { try TestCertificateAuthority(commonName: "OperationNetworking Proxy Test Root") }
    private var servers: [ExternalServer] = []
    private var origins: [TestServer] = []

    override func tearDown() {
        servers.forEach { $0.stop() }
        origins.forEach { $0.shutdown() }
        for (space, credentials) in URLCredentialStorage.shared.allCredentials where space.isProxy() {
            credentials.values.forEach { URLCredentialStorage.shared.remove($0, for: space) }
        }
        super.tearDown()
    }

    private func squid(user: String? = nil, password: String? = nil) throws -> ExternalServer {
        let server = try ExternalServer.squid(user: user, password: password)
        servers.append(server)
        return server
    }

    private func proxyURL(_ squid: ExternalServer) throws -> URL {
        try XCTUnwrap(URL(string: "http://127.0.0.1:\(squid.port)"))
    }

    /// An HTTPS origin (TLS 1.2/1.3, certificate from the run's CA) and the policy that trusts it.
    private func httpsOrigin() throws -> (TestServer, SecurityPolicy) {
        let authority = try ProxyTests.authority.get()
        let server = try TestServer(tls: try authority.issue())
        origins.append(server)
        let policy = SecurityPolicy.default()
        policy.additionalTrustAnchors = [authority.certificate]
        return (server, policy)
    }

    private func operation(_ url: URL, proxy: ExternalServer, policy: SecurityPolicy? = nil) throws -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.proxy = .proxy(try proxyURL(proxy))
        if let policy { operation.securityPolicy = policy }
        return operation
    }

    // MARK: - HTTPS tunnels

    func testAnHTTPSRequestThroughTheProxyReportsOneResponse() throws {
        let squid = try self.squid()
        let (origin, policy) = try httpsOrigin()
        let operation = try self.operation(origin.url("/echo"), proxy: squid, policy: policy)
        let monitor = CountingMonitor()
        operation.eventMonitors = [monitor]
        let outcome = run(operation)
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertEqual(origin.requests.count, 1)
        XCTAssertTrue(eventually { monitor.finished == 1 })
        XCTAssertEqual(monitor.responses, [200], "the proxy's 'Connection established' is not a response")
        XCTAssertEqual(origin.acceptedConnections, 1)
        squid.stop(keepingFiles: true)   // squid logs a tunnel when it closes
        XCTAssertTrue(squid.accessLog.contains { $0.contains("CONNECT") }, "the request went through the tunnel")
    }

    func testAnUntrustedServerBehindTheProxyHasNoResponse() throws {
        let squid = try self.squid()
        let (origin, _) = try httpsOrigin()
        let operation = try self.operation(origin.url("/echo"), proxy: squid)   // the system store does not know the CA
        let outcome = run(operation)
        XCTAssertEqual(outcome.urlErrorCode, .serverCertificateUntrusted)
        XCTAssertNil(operation.response, "the CONNECT answer is not the server's response")
        XCTAssertEqual(origin.requests.count, 0)
    }

    func testAResumedDownloadThroughTheProxyIsByteExact() throws {
        let squid = try self.squid()
        let (origin, policy) = try httpsOrigin()
        let size = 400_000
        let operation = try self.operation(origin.url("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5"), proxy: squid,
                                           policy: policy)
        let (done, box) = startAndPause(operation)
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        let offset = try XCTUnwrap(operation.resumePointForTesting?.offset)
        operation.resume()
        wait(for: [done], timeout: 30)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(operation.responseData, deterministicBytes(size))
        XCTAssertEqual(operation.response?.statusCode, 206)
        XCTAssertEqual(origin.requests.last?.header("Range"), "bytes=\(offset)-")
    }

    func testAResumedDownloadThroughTheProxyToAFileIsByteExact() throws {
        let squid = try self.squid()
        let (origin, policy) = try httpsOrigin()
        let size = 400_000
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let operation = try self.operation(origin.url("/bytes/\(size)?chunkSize=4000&chunkDelayMs=5"), proxy: squid,
                                           policy: policy)
        operation.outputStream = OutputStream(toFileAtPath: path, append: false)
        let (done, box) = startAndPause(operation)
        XCTAssertTrue(eventually { operation.resumePointForTesting != nil })
        operation.resume()
        wait(for: [done], timeout: 30)
        XCTAssertTrue(box.value?.isSuccess ?? false, "\(String(describing: box.value?.error))")
        XCTAssertEqual(FileManager.default.contents(atPath: path), deterministicBytes(size))
    }

    // MARK: - Proxy authentication

    func testA407ToConnectIsADistinctErrorThatIsNotRetried() throws {
        let squid = try self.squid(user: "ada", password: "lovelace")
        let (origin, policy) = try httpsOrigin()
        let operation = try self.operation(origin.url("/echo"), proxy: squid, policy: policy)
        operation.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01)
        let outcome = run(operation)
        XCTAssertEqual(outcome.urlErrorCode, .userAuthenticationRequired, "\(String(describing: outcome.error))")
        XCTAssertTrue(outcome.error?.localizedDescription.contains("407") ?? false)
        XCTAssertEqual(operation.attempts, 1)
        XCTAssertEqual(origin.requests.count, 0)
    }

    func testTheOperationsProxyCredentialAnswersA407ToConnect() throws {
        let squid = try self.squid(user: "ada", password: "lovelace")
        let (origin, policy) = try httpsOrigin()
        let operation = try self.operation(origin.url("/echo"), proxy: squid, policy: policy)
        operation.proxyCredential = URLCredential(user: "ada", password: "lovelace", persistence: .none)
        let outcome = run(operation)
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertEqual(origin.requests.count, 1)
        XCTAssertNil(origin.requests.first?.header("Proxy-Authorization"), "the proxy's credential never reaches the server")
    }

    func testTheOperationsCredentialAnswersA407ToConnect() throws {
        let squid = try self.squid(user: "ada", password: "lovelace")
        let (origin, policy) = try httpsOrigin()
        let operation = try self.operation(origin.url("/echo"), proxy: squid, policy: policy)
        operation.credential = URLCredential(user: "ada", password: "lovelace", persistence: .none)
        XCTAssertTrue(run(operation).isSuccess)
    }

    func testACredentialStoredForTheProxyIsFoundForHTTPAndHTTPS() throws {
        let squid = try self.squid(user: "ada", password: "lovelace")
        let space = URLProtectionSpace(proxyHost: "127.0.0.1", port: squid.port, type: "http", realm: "onet-test",
                                       authenticationMethod: NSURLAuthenticationMethodHTTPBasic)
        URLCredentialStorage.shared.setDefaultCredential(
            URLCredential(user: "ada", password: "lovelace", persistence: .forSession), for: space)
        let (origin, policy) = try httpsOrigin()
        XCTAssertTrue(run(try operation(origin.url("/echo"), proxy: squid, policy: policy)).isSuccess, "https, through CONNECT")
        let plain = try TestServer()
        origins.append(plain)
        let outcome = run(try operation(plain.url("/echo"), proxy: squid))
        XCTAssertTrue(outcome.isSuccess, "plain http: \(String(describing: outcome.error))")
        XCTAssertEqual(plain.requests.count, 1)
    }

    // MARK: - Settings

    func testTheManagersProxySettingReachesItsOperationsAndIsArchived() throws {
        let squid = try self.squid()
        let origin = try TestServer()
        origins.append(origin)
        let manager = HTTPRequestOperationManager(baseURL: origin.baseURL)
        manager.responseSerializer = HTTPResponseSerializer()
        manager.proxy = .proxy(try proxyURL(squid), bypass: ["example.invalid"])
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: try SafeArchive.archive(manager))
        XCTAssertEqual(restored.proxy, manager.proxy)
        XCTAssertEqual((restored.copy() as? HTTPRequestOperationManager)?.proxy, manager.proxy)
        let done = expectation(description: "GET")
        restored.GET("echo", parameters: nil, success: { _, _ in done.fulfill() }, failure: { _, error in
            XCTFail("\(error)")
            done.fulfill()
        })
        wait(for: [done], timeout: 10)
        XCTAssertNotNil(origin.requests.first?.header("Via"), "the request came through squid")
        squid.stop(keepingFiles: true)   // squid writes its log out when it stops
        XCTAssertTrue(squid.accessLog.contains { $0.contains("/echo") })
    }

    func testDirectIgnoresTheEnvironmentsProxy() throws {
        let squid = try self.squid()
        let origin = try TestServer()
        origins.append(origin)
        setenv("http_proxy", try proxyURL(squid).absoluteString, 1)
        defer { unsetenv("http_proxy") }
        let viaEnvironment = HTTPRequestOperation(request: URLRequest(url: origin.url("/echo")))
        XCTAssertTrue(run(viaEnvironment).isSuccess)
        XCTAssertNotNil(origin.requests.last?.header("Via"), "the environment's proxy is the default")
        let direct = HTTPRequestOperation(request: URLRequest(url: origin.url("/echo")))
        direct.proxy = .direct
        XCTAssertTrue(run(direct).isSuccess)
        XCTAssertNil(origin.requests.last?.header("Via"), ".direct goes straight to the server")
    }

    /// A proxy variable set or removed at run time takes effect on the next request, on a handle used before.
    func testEnvironmentProxySetAtRunTimeIsSeenByTheNextRequest() throws {
        let squid = try self.squid()
        let origin = try TestServer()
        origins.append(origin)
        unsetenv("http_proxy")
        XCTAssertTrue(run(HTTPRequestOperation(request: URLRequest(url: origin.url("/echo")))).isSuccess)
        XCTAssertNil(origin.requests.last?.header("Via"), "no proxy variable: straight to the server")
        setenv("http_proxy", try proxyURL(squid).absoluteString, 1)
        defer { unsetenv("http_proxy") }
        XCTAssertTrue(run(HTTPRequestOperation(request: URLRequest(url: origin.url("/echo")))).isSuccess)
        XCTAssertNotNil(origin.requests.last?.header("Via"), "the variable set since is read by the next request")
        unsetenv("http_proxy")
        XCTAssertTrue(run(HTTPRequestOperation(request: URLRequest(url: origin.url("/echo")))).isSuccess)
        XCTAssertNil(origin.requests.last?.header("Via"), "and its removal too")
    }

    func testEnvironmentResolutionFollowsLibcurlsRules() throws {
        let environment = ["https_proxy": "proxy.corp:3128", "http_proxy": "http://plain.corp:8080",
                           "no_proxy": "internal.corp, .local"]
        let setting = ProxySetting.environment
        XCTAssertEqual(setting.proxyURL(for: URL(string: "https://a.example"), environment: environment)?.absoluteString,
                       "http://proxy.corp:3128")
        XCTAssertEqual(setting.proxyURL(for: URL(string: "http://a.example"), environment: environment)?.host, "plain.corp")
        XCTAssertNil(setting.proxyURL(for: URL(string: "https://x.internal.corp"), environment: environment))
        XCTAssertNil(setting.proxyURL(for: URL(string: "http://printer.local"), environment: environment))
        XCTAssertNil(ProxySetting.direct.proxyURL(for: URL(string: "http://a.example"), environment: environment))
        XCTAssertNil(ProxySetting.proxy(try XCTUnwrap(URL(string: "socks5h://s:1080")), bypass: ["*"])
            .proxyURL(for: URL(string: "http://a.example")))
    }
}

/// Counts what event monitors hear; guarded by its lock.
private final class CountingMonitor: EventMonitor, @unchecked Sendable {
    private let lock = NSLock()
    private var statuses: [Int] = []   // guarded by lock
    private var finishes = 0           // guarded by lock
    var responses: [Int] { lock.withLock { statuses } }
    var finished: Int { lock.withLock { finishes } }
    func operation(_ operation: URLConnectionOperation, didReceive response: HTTPURLResponse) {
        lock.withLock { statuses.append(response.statusCode) }
    }
    func operationDidFinish(_ operation: URLConnectionOperation) { lock.withLock { finishes += 1 } }
}
