import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A credential an `AuthenticationInterceptor` applies to requests: an OAuth token, an API key.
/// - Threading: `Sendable`; read from any thread.
public protocol AuthenticationCredential: Sendable {
    /// Whether the credential must be refreshed before it is applied again (its expiry is near);
    /// the interceptor then refreshes it before the next request goes out, once for all of them.
    var requiresRefresh: Bool { get }
}

/// What an `AuthenticationInterceptor` needs to know about a kind of credential: how it goes on a
/// request, how a new one is obtained, and how a response says it is no longer valid.
/// - Threading: `Sendable`; the methods are called from the interceptor's tasks (never on the network
///   thread), concurrently for different operations, and never under a lock of the library.
public protocol Authenticator: Sendable {
    /// The credential.
    associatedtype Credential: AuthenticationCredential

    /// Puts `credential` on `request` (usually an `Authorization` field).
    func apply(_ credential: Credential, to request: inout URLRequest)

    /// A new credential in place of `credential`, which a server refused or which `requiresRefresh`.
    /// Called once for every operation waiting with that credential; a thrown error fails each of
    /// them with that error.
    func refresh(_ credential: Credential) async throws -> Credential

    /// Whether `response` to `request` (with `error`, the attempt's failure, if any) says that the
    /// credential is no longer valid. Default: the status is `401`.
    func didRequest(_ request: URLRequest, with response: HTTPURLResponse, failDueToAuthenticationError error: Error?)
        -> Bool

    /// Whether `request` carries `credential` (rather than an older one). Default: applying
    /// `credential` to `request` changes none of its header fields and not its URL.
    func isRequest(_ request: URLRequest, authenticatedWith credential: Credential) -> Bool
}

extension Authenticator {
    /// `true` for a `401`.
    public func didRequest(_ request: URLRequest, with response: HTTPURLResponse,
                           failDueToAuthenticationError error: Error?) -> Bool {
        response.statusCode == 401
    }

    /// `true` when applying `credential` to `request` changes none of its header fields and not its URL.
    public func isRequest(_ request: URLRequest, authenticatedWith credential: Credential) -> Bool {
        var applied = request
        apply(credential, to: &applied)
        return applied.url == request.url && (applied.allHTTPHeaderFields ?? [:]) == (request.allHTTPHeaderFields ?? [:])
    }
}

/// A `RequestInterceptor` that applies a credential to every request and refreshes it when a response
/// says it is no longer valid (`Authenticator.didRequest(_:with:failDueToAuthenticationError:)`: a `401`
/// by default), or before a request when it `requiresRefresh`.
///
/// **One refresh for all.** Every operation in flight that the server refuses with the current
/// credential waits for the same refresh (`Authenticator.refresh(_:)` is called once), and each is
/// then sent again with the new credential; requests adapted while a refresh is under way wait for it
/// too. A refresh that fails fails every operation that waited for it with its error (the error is
/// thrown from the retry's adapt, so each operation's failure handler gets it as it is). An operation
/// refused with an older credential (refreshed meanwhile by another) is sent again with the current one
/// without a refresh.
///
/// **No loop.** An operation is never sent again twice for the same credential: one still refused
/// after the refresh it waited for ends with that response (a `401` fails an `HTTPRequestOperation`
/// through its serializer, as any `401` does).
///
/// Share one interceptor between the operations that use the same credential (set it on their
/// manager). Never archived; `copy()` keeps it.
/// - Threading: `Sendable`; its state is owned by its lock, which is never held while the
///   authenticator is called or while anything is awaited.
public final class AuthenticationInterceptor<A: Authenticator>: RequestInterceptor {
    private struct State: Sendable {
        var credential: A.Credential
        /// Counts the credentials: 0 for the first, one more for each refresh or `credential` set.
        var generation = 0
        /// The refresh under way, shared by everyone who waits for it.
        var refresh: Task<A.Credential, Error>?
        /// The operations sent again after a refusal, with the credential generation they were sent with.
        var retried: [ObjectIdentifier: Entry] = [:]
        /// The operations whose refresh failed: their next adapt throws the error.
        var failed: [ObjectIdentifier: Entry] = [:]
        /// The operations whose `retry` waits for the refresh under way.
        var waiting = 0
    }

    /// One operation's note; the weak reference tells an entry from a later operation at the same address.
    private struct Entry: Sendable {
        weak var operation: URLConnectionOperation?
        var generation = 0
        var error: UncheckedSendableError?
    }

    private let authenticator: A
    private let state: Protected<State>

    /// An interceptor applying `credential` with `authenticator`.
    public init(authenticator: A, credential: A.Credential) {
        self.authenticator = authenticator
        state = Protected(State(credential: credential))
    }

    /// The credential applied to requests from now on. Setting it counts as a new credential (a request
    /// refused with it may be sent again once); a refresh under way still replaces it when it ends.
    public var credential: A.Credential {
        get { state.withLock { $0.credential } }
        set {
            state.withLock {
                $0.credential = newValue
                $0.generation += 1
            }
        }
    }

    /// The operations whose `retry` waits for the refresh under way (for tests).
    var operationsWaitingForRefresh: Int { state.withLock { $0.waiting } }

    /// Applies the current credential, after the refresh under way (or one `requiresRefresh` starts).
    /// Throws the error of a failed refresh this operation waited for. Runs in the operation's
    /// interceptor task.
    public func adapt(_ request: URLRequest, for operation: URLConnectionOperation) async throws -> URLRequest {
        let key = ObjectIdentifier(operation)
        // Two rounds at most: a refreshed credential that still requires a refresh is applied as it is.
        for round in 0..<2 {
            let (credential, refresh, failure) = state.withLock { state -> (A.Credential, Task<A.Credential, Error>?, Error?) in
                if let entry = state.failed.removeValue(forKey: key), entry.operation === operation, let error = entry.error {
                    return (state.credential, nil, error.error)
                }
                if state.refresh == nil, round == 0, state.credential.requiresRefresh { startRefresh(&state) }
                return (state.credential, state.refresh, nil)
            }
            if let failure { throw failure }
            guard let refresh else {
                var adapted = request
                authenticator.apply(credential, to: &adapted)
                return adapted
            }
            _ = try await refresh.value
        }
        var adapted = request
        authenticator.apply(state.withLock { $0.credential }, to: &adapted)
        return adapted
    }

    /// `.retry` when `response` says the credential the attempt carried is no longer valid and the
    /// operation was not yet sent again with the current one (after the one refresh, when it carried
    /// the current credential); `.doNotRetry` otherwise. Runs in the operation's interceptor task.
    public func retry(_ operation: URLConnectionOperation, dueTo error: Error?, response: HTTPURLResponse?) async
        -> RetryDecision {
        let key = ObjectIdentifier(operation)
        let sent = operation.currentRequest
        guard let response, authenticator.didRequest(sent, with: response, failDueToAuthenticationError: error) else {
            state.withLock { forget(key, in: &$0) }
            return .doNotRetry
        }
        let (credential, generation) = state.withLock { ($0.credential, $0.generation) }
        let current = authenticator.isRequest(sent, authenticatedWith: credential)
        let refresh = state.withLock { state -> Task<A.Credential, Error>?? in
            state.retried = state.retried.filter { $0.value.operation != nil }
            let retriedWith = state.retried[key].flatMap { $0.operation === operation ? $0.generation : nil }
            guard retriedWith != state.generation else {
                forget(key, in: &state)
                return .none   // refused again with the credential it was sent again with: no loop
            }
            if !current || state.generation != generation {
                // Sent with an older credential, or one refreshed since: again with the current one.
                state.retried[key] = Entry(operation: operation, generation: state.generation)
                return .some(nil)
            }
            if state.refresh == nil { startRefresh(&state) }
            state.waiting += 1
            return .some(state.refresh)
        }
        guard let refresh else { return .doNotRetry }
        guard let task = refresh else { return .retry }
        do {
            _ = try await task.value
            state.withLock {
                $0.waiting -= 1
                $0.retried[key] = Entry(operation: operation, generation: $0.generation)
            }
        } catch {
            state.withLock {
                $0.waiting -= 1
                $0.failed[key] = Entry(operation: operation, error: UncheckedSendableError(error))
            }
        }
        return .retry
    }

    /// Starts the one refresh of the current credential. Call inside `state.withLock`; the task takes
    /// the lock only after its `await`, once this acquisition ended.
    private func startRefresh(_ state: inout State) {
        let old = state.credential
        state.refresh = Task { [authenticator, weak self] in
            do {
                let new = try await authenticator.refresh(old)
                self?.state.withLock {
                    $0.credential = new
                    $0.generation += 1
                    $0.refresh = nil
                }
                return new
            } catch {
                self?.state.withLock { $0.refresh = nil }
                throw error
            }
        }
    }

    private func forget(_ key: ObjectIdentifier, in state: inout State) {
        state.retried[key] = nil
        state.failed[key] = nil
    }
}

/// An error handed from the task that saw it to the one that throws it, never shared.
/// - Threading: written once, read once, under the interceptor's lock: `@unchecked Sendable` because
///   `any Error` is not checked `Sendable`.
private struct UncheckedSendableError: @unchecked Sendable {
    let error: Error
    init(_ error: Error) { self.error = error }
}
