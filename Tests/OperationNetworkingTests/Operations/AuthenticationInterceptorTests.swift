import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `AuthenticationInterceptor` against the server's `/bearer/TOKEN` (401 unless the request carries
/// TOKEN) and `/refresh/TOKEN` (hands out TOKEN): one refresh for every operation in flight, checked on
/// the wire; a failed refresh fails them all with its error; no loop; cancel while the refresh runs.
final class AuthenticationInterceptorTests: ServerTestCase {
    private static let count = 50

    /// 50 operations in flight all get a 401 with the old token; the refresh, held until the server saw
    /// all 50, runs once; all 50 are sent again with the new token and succeed.
    func testOneRefreshForEveryOperationInFlight() throws {
        let gate = Gate()
        let authenticator = BearerAuthenticator(refreshURL: server.url("/refresh/fresh"), gate: gate)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: BearerToken(value: "stale"))
        let runs = startAll(interceptor, path: "/bearer/fresh?barrier=\(Self.count)")
        XCTAssertTrue(eventually(timeout: 20) { interceptor.operationsWaitingForRefresh == Self.count },
                      "every operation got its 401 and waits for the refresh")
        XCTAssertEqual(authenticator.refreshCalls, 1)
        gate.open()
        wait(for: runs.map(\.1), timeout: 30)
        XCTAssertTrue(runs.allSatisfy { $0.2.value?.isSuccess ?? false }, "\(runs.compactMap { $0.2.value?.error }.first.map { "\($0)" } ?? "")")
        XCTAssertEqual(authenticator.refreshCalls, 1)
        XCTAssertEqual(server.requests(path: "/refresh/fresh").count, 1, "one refresh on the wire")
        let sent = server.requests(path: "/bearer/fresh").map { $0.header("Authorization") ?? "none" }
        XCTAssertEqual(sent.filter { $0 == "Bearer stale" }.count, Self.count)
        XCTAssertEqual(sent.filter { $0 == "Bearer fresh" }.count, Self.count, "each sent again once, with the new token")
        XCTAssertEqual(interceptor.credential.value, "fresh")
        XCTAssertTrue(runs.allSatisfy { $0.0.attempts == 2 })
    }

    /// A refresh that fails fails every operation that waited for it with its error, and sends nothing more.
    func testAFailedRefreshFailsThemAllWithItsError() throws {
        let gate = Gate()
        let authenticator = BearerAuthenticator(refreshURL: server.url("/refresh/fresh?status=500"), gate: gate)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: BearerToken(value: "stale"))
        let runs = startAll(interceptor, path: "/bearer/fresh?barrier=\(Self.count)")
        XCTAssertTrue(eventually(timeout: 20) { interceptor.operationsWaitingForRefresh == Self.count })
        gate.open()
        wait(for: runs.map(\.1), timeout: 30)
        for (operation, _, box) in runs {
            XCTAssertEqual(box.value?.error as? RefreshFailed, RefreshFailed(status: 500))
            XCTAssertEqual(operation.error as? RefreshFailed, RefreshFailed(status: 500))
        }
        XCTAssertEqual(authenticator.refreshCalls, 1)
        XCTAssertEqual(server.requests(path: "/refresh/fresh").count, 1)
        XCTAssertEqual(server.requests(path: "/bearer/fresh").count, Self.count, "nothing sent after the failed refresh")
        XCTAssertEqual(interceptor.credential.value, "stale")
    }

    /// An endpoint that refuses the refreshed token too ends the operation with its 401: one refresh,
    /// two requests, no loop.
    func testAnEndpointThatKeepsRefusingEndsWithFailure() throws {
        let authenticator = BearerAuthenticator(refreshURL: server.url("/refresh/other"), gate: nil)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: BearerToken(value: "stale"))
        let operation = HTTPRequestOperation(request: request("/bearer/fresh"))
        operation.interceptor = interceptor
        let outcome = run(operation)
        XCTAssertEqual((outcome.error as NSError?)?.code, NSURLErrorBadServerResponse)
        XCTAssertEqual(operation.response?.statusCode, 401)
        XCTAssertEqual(server.requests(path: "/bearer/fresh").map { $0.header("Authorization") ?? "none" },
                       ["Bearer stale", "Bearer other"])
        XCTAssertEqual(authenticator.refreshCalls, 1)
        XCTAssertEqual(server.requests(path: "/refresh/other").count, 1)
    }

    /// A credential that requires a refresh is refreshed before the first request goes out.
    func testACredentialThatRequiresRefreshIsRefreshedFirst() throws {
        let authenticator = BearerAuthenticator(refreshURL: server.url("/refresh/fresh"), gate: nil)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator,
                                                    credential: BearerToken(value: "stale", requiresRefresh: true))
        let operation = HTTPRequestOperation(request: request("/bearer/fresh"))
        operation.interceptor = interceptor
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(server.requests(path: "/bearer/fresh").map { $0.header("Authorization") ?? "none" }, ["Bearer fresh"])
        XCTAssertEqual(authenticator.refreshCalls, 1)
    }

    /// `cancel()` while the operation waits for the refresh ends it at once as cancelled; once the
    /// refresh ends, nothing more is sent for it.
    func testCancelWhileTheRefreshRunsEndsAtOnce() throws {
        let gate = Gate()
        let authenticator = BearerAuthenticator(refreshURL: server.url("/refresh/fresh"), gate: gate)
        let interceptor = AuthenticationInterceptor(authenticator: authenticator, credential: BearerToken(value: "stale"))
        let operation = HTTPRequestOperation(request: request("/bearer/fresh"))
        operation.interceptor = interceptor
        let (done, box) = recordOutcome(of: operation)
        operation.start()
        XCTAssertTrue(eventually { authenticator.refreshCalls == 1 })
        operation.cancel()
        wait(for: [done], timeout: 5)
        XCTAssertEqual(box.value?.urlErrorCode, .cancelled)
        gate.open()
        XCTAssertTrue(eventually { interceptor.credential.value == "fresh" })
        let server = self.server!
        XCTAssertFalse(eventually(timeout: 1) { server.requests(path: "/bearer/fresh").count > 1 },
                       "nothing sent after cancel() returned")
    }

    private func startAll(_ interceptor: RequestInterceptor, path: String)
        -> [(HTTPRequestOperation, XCTestExpectation, OutcomeBox)] {
        (0..<Self.count).map { _ in
            let operation = HTTPRequestOperation(request: request(path, timeout: 30))
            operation.interceptor = interceptor
            let (done, box) = recordOutcome(of: operation)
            operation.start()
            return (operation, done, box)
        }
    }
}

/// A bearer token.
struct BearerToken: AuthenticationCredential {
    let value: String
    var requiresRefresh = false
}

/// The refresh route's refusal.
struct RefreshFailed: Error, Equatable {
    let status: Int
}

/// Applies `Authorization: Bearer …`; refreshes by asking the server's refresh route (through the
/// library), after `gate` opened.
final class BearerAuthenticator: Authenticator, @unchecked Sendable {   // every stored var is guarded by lock
    private let refreshURL: URL
    private let gate: Gate?
    private let lock = NSLock()
    private var refreshes = 0   // guarded by lock

    init(refreshURL: URL, gate: Gate?) {
        self.refreshURL = refreshURL
        self.gate = gate
    }

    var refreshCalls: Int { lock.withLock { refreshes } }

    func apply(_ credential: BearerToken, to request: inout URLRequest) {
        request.setValue("Bearer \(credential.value)", forHTTPHeaderField: "Authorization")
    }

    func refresh(_ credential: BearerToken) async throws -> BearerToken {
        lock.withLock { refreshes += 1 }
        if let gate { await gate.wait() }
        let operation = HTTPRequestOperation(request: URLRequest(url: refreshURL))
        operation.start()
        do {
            _ = try await operation.value()
        } catch {
            throw RefreshFailed(status: operation.response?.statusCode ?? -1)
        }
        return BearerToken(value: operation.responseString ?? "")
    }
}
