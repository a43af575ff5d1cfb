import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Through a real SOCKS5 proxy (Debian's dante) that takes only a user/password login: the proxy
/// credential logs in up front, as the credential stored for the proxy does; a refused login is a
/// distinct error that is never retried; the password is in no archive and no description.
final class SOCKSProxyTests: LibraryTestCase {
    private static let password = "s0cks-PASSWORD-5ecret"
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

    /// dante requiring the login of a fresh system user, that user, and a plain http origin.
    private func fixtures() throws -> (ExternalServer, ExternalServer.SOCKSUser, TestServer) {
        let user = ExternalServer.socksUser(password: SOCKSProxyTests.password)
        let dante = try ExternalServer.dante(user: user)
        servers.append(dante)
        let origin = try TestServer()
        origins.append(origin)
        return (dante, user, origin)
    }

    private func socksURL(_ dante: ExternalServer, scheme: String = "socks5h", userInfo: String = "") throws -> URL {
        try XCTUnwrap(URL(string: "\(scheme)://\(userInfo)127.0.0.1:\(dante.port)"))
    }

    private func operation(_ url: URL, through proxy: URL) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.proxy = .proxy(proxy)
        return operation
    }

    // MARK: - Logging in

    func testTheProxyCredentialLogsIntoTheSOCKS5Proxy() throws {
        let (dante, user, origin) = try fixtures()
        for scheme in ["socks5h", "socks5"] {
            let operation = self.operation(origin.url("/echo?scheme=\(scheme)"), through: try socksURL(dante, scheme: scheme))
            operation.proxyCredential = URLCredential(user: user.name, password: user.password, persistence: .none)
            let outcome = run(operation)
            XCTAssertTrue(outcome.isSuccess, "\(scheme): \(String(describing: outcome.error))")
        }
        XCTAssertEqual(origin.requests.map(\.uri), ["/echo?scheme=socks5h", "/echo?scheme=socks5"])
        XCTAssertNil(origin.requests.first?.header("Proxy-Authorization"), "the login goes to the proxy, not the server")
        XCTAssertEqual(dante.danteLog.filter { $0.contains("tcp/connect [") && $0.contains("username%\(user.name)@") }.count, 2,
                       dante.danteLog.joined(separator: "\n"))
    }

    func testACredentialStoredForTheSOCKS5ProxyLogsIn() throws {
        let (dante, user, origin) = try fixtures()
        let space = URLProtectionSpace(proxyHost: "127.0.0.1", port: dante.port, type: NSURLProtectionSpaceSOCKSProxy,
                                       realm: nil, authenticationMethod: nil)
        URLCredentialStorage.shared.setDefaultCredential(
            URLCredential(user: user.name, password: user.password, persistence: .forSession), for: space)
        let outcome = run(operation(origin.url("/echo"), through: try socksURL(dante)))
        XCTAssertTrue(outcome.isSuccess, "\(String(describing: outcome.error))")
        XCTAssertEqual(origin.requests.count, 1)
        let unstored = operation(origin.url("/echo"), through: try socksURL(dante))
        unstored.shouldUseCredentialStorage = false
        XCTAssertEqual(run(unstored).urlErrorCode, .userAuthenticationRequired, "the storage is read only when allowed")
        XCTAssertEqual(origin.requests.count, 1)
    }

    // MARK: - A refused login

    func testARefusedLoginIsADistinctErrorAfterOneAttempt() throws {
        let (dante, user, origin) = try fixtures()
        for credential in [URLCredential(user: user.name, password: "wrong", persistence: .none), nil] {
            let operation = self.operation(origin.url("/echo"), through: try socksURL(dante))
            operation.proxyCredential = credential
            operation.retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: 0.01)
            let monitor = RetryCountingMonitor()
            operation.eventMonitors = [monitor]
            // dante logs each refused login when it closes that client's connection.
            let refusals: @Sendable () -> Int = { dante.danteLog.filter { $0.contains("tcp/accept ]") && $0.contains("authentication") }.count }
            let refusedBefore = refusals()
            let outcome = run(operation)
            let error = outcome.error as? URLError
            XCTAssertEqual(error?.code, .userAuthenticationRequired, "\(String(describing: outcome.error))")
            XCTAssertTrue(error?.localizedDescription.contains("SOCKS5 proxy 127.0.0.1:\(dante.port)") ?? false,
                          "\(String(describing: error?.localizedDescription))")
            XCTAssertEqual(error?.userInfo[CurlErrorCodeKey] as? Int, 97)
            XCTAssertEqual(operation.attempts, 1)
            XCTAssertEqual(monitor.retries, 0, "never retried, though the policy retries failed connections")
            XCTAssertTrue(eventually { refusals() > refusedBefore })
            XCTAssertEqual(refusals(), refusedBefore + 1, "one login to the proxy: \(dante.danteLog.joined(separator: "\n"))")
        }
        XCTAssertEqual(origin.requests.count, 0)
        XCTAssertFalse(RetryPolicy().retryableErrorCodes.contains(.userAuthenticationRequired))
    }

    // MARK: - No password kept or shown

    /// A user and password written in the proxy's URL log in within this process, and are in no
    /// archive and no description: a restored manager logs in with its proxy credential.
    func testTheArchiveAndDescriptionsHoldNoPassword() throws {
        let (dante, user, origin) = try fixtures()
        let manager = HTTPRequestOperationManager(baseURL: origin.baseURL)
        manager.responseSerializer = HTTPResponseSerializer()
        manager.proxy = .proxy(try socksURL(dante, userInfo: "\(user.name):\(user.password)@"), bypass: ["example.invalid"])
        XCTAssertNil(get("echo", with: manager), "the URL's user and password log in, in this process")
        let archive = try SafeArchive.archive(manager)
        manager.proxyCredential = URLCredential(user: user.name, password: user.password, persistence: .none)
        for bytes in [archive, try SafeArchive.archive(manager)] {
            for secret in [user.password, user.name] {
                XCTAssertNil(bytes.range(of: Data(secret.utf8)), "\(secret) in the archive")
                XCTAssertNil(bytes.range(of: try XCTUnwrap(secret.data(using: .utf16BigEndian))), "\(secret) in the archive (UTF-16)")
            }
        }
        var dumped = ""
        dump(manager.proxy, to: &dumped)
        for text in [String(describing: manager), String(reflecting: manager), String(describing: manager.proxy),
                     String(reflecting: manager.proxy), "\(manager.proxy)", dumped] {
            XCTAssertFalse(text.contains(user.password), text)
        }
        XCTAssertTrue(String(describing: manager.proxy).contains("\(user.name):***@127.0.0.1:\(dante.port)"),
                      String(describing: manager.proxy))

        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: archive)
        XCTAssertEqual(restored.proxy, .proxy(try socksURL(dante), bypass: ["example.invalid"]), "the URL without its user and password")
        XCTAssertEqual((get("echo", with: restored) as? URLError)?.code, .userAuthenticationRequired, "no login was kept")
        restored.proxyCredential = URLCredential(user: user.name, password: user.password, persistence: .none)
        XCTAssertNil(get("echo", with: restored), "the restored manager logs in with its proxy credential")
        XCTAssertEqual(origin.requests.count, 2)
    }

    // MARK: - The test server itself

    /// Stopping the proxy ends danted, not only the shell that runs it: nothing is left running after
    /// the test.
    func testStoppingTheProxyEndsDanted() throws {
        let dante = try ExternalServer.dante()
        servers.append(dante)
        let pidFile = dante.directory.appendingPathComponent("danted.pid")
        let readPID: @Sendable () -> pid_t? = {
            (try? String(contentsOf: pidFile, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        }
        XCTAssertTrue(eventually { readPID() != nil }, "danted wrote no pid in its pid file")
        let pid = try XCTUnwrap(readPID())
        XCTAssertEqual(kill(pid, 0), 0, "danted runs")
        dante.stop()
        XCTAssertTrue(eventually { kill(pid, 0) != 0 && errno == ESRCH }, "danted (\(pid)) still runs after stop()")
    }

    /// GET `path` with `manager`; the error, if it failed.
    private func get(_ path: String, with manager: HTTPRequestOperationManager) -> Error? {
        let done = expectation(description: "GET \(path)")
        let failure = FailureBox()
        manager.GET(path, parameters: nil, success: { _, _ in done.fulfill() }, failure: { _, error in
            failure.set(error)
            done.fulfill()
        })
        wait(for: [done], timeout: 10)
        return failure.error
    }
}

/// The error a failure block received.
private final class FailureBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Error?   // guarded by lock
    var error: Error? { lock.withLock { stored } }
    func set(_ error: Error) { lock.withLock { stored = error } }
}

/// Counts the retries an operation announces.
private final class RetryCountingMonitor: EventMonitor, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0   // guarded by lock
    var retries: Int { lock.withLock { count } }
    func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        lock.withLock { count += 1 }
    }
}
