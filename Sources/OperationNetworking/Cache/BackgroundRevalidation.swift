import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The revalidation of a stale response that answered within its `stale-while-revalidate` window
/// (RFC 5861 §3): a run of the library's own, made by `CacheState.consult` in the phase the answering
/// run would have entered (revalidating, or loading when the response has no validator).
///
/// It runs as an internal transfer of a copy of the operation's request with the same security
/// snapshot, client certificate, proxy, size limit and retry policy as the operation's own run, so the
/// connection is trusted, and the response stored under the trust identity (`CacheTrust`), exactly as
/// a revalidation in the foreground would be. It runs none of the app's code: no block, no event
/// monitor; a redirect is not followed (its `3xx`, never stored, drops the entry, so the next request
/// meets the redirect and its block), a challenge is not answered (nothing changes then). An operation
/// with a cache response block never answers stale (`CacheRequest.mayRevalidateInBackground`): what is
/// stored is the block's to decide. At most one runs at a time per cache and key; a stale answer while
/// one runs starts none. A failure changes nothing: the entry stays until its window is over, and is
/// then revalidated in the foreground.
struct BackgroundRevalidation {
    /// The run's part of the cache: revalidating, or loading, the stored response.
    var machine: CacheState
    /// The fields that make its request conditional (none when the stored response has no validator).
    let fields: [(name: String, value: String)]
    /// The URL the stored response is kept under.
    let key: URL

    /// What the run's transfer is made with, taken from the operation for its own run.
    struct Settings {
        let request: URLRequest
        let security: SecurityPolicy.Snapshot?
        let clientCertificate: ClientCertificate?
        let maximumBodySize: Int64?
        let retryPolicy: RetryPolicy
        let proxy: ProxySetting
    }

    /// Sends the revalidation of `settings.request` (its conditional fields added) unless one already
    /// runs for `storage`'s cache and the key; its end updates `storage` as a run's end would.
    func start(_ settings: Settings, storage: CacheStorage) {
        let running = BackgroundRevalidator.Running(cache: ObjectIdentifier(storage.urlCache),
                                                    key: CacheEntryMetadata.key(for: key))
        guard BackgroundRevalidator.begin(running) else { return }
        let revalidator = BackgroundRevalidator(machine: machine, storage: storage, running: running)
        let transfer = Transfer(request: settings.request, conditionalFields: fields, outputStream: nil, resumeFrom: nil,
                                initialBody: Data(),
                                security: settings.security, clientCertificate: settings.clientCertificate,
                                maximumBodySize: settings.maximumBodySize, retryPolicy: settings.retryPolicy,
                                proxy: settings.proxy, delegate: revalidator)
        NetworkThread.shared.submit(.add(transfer))
    }
}

/// The delegate of a background revalidation's transfer: the cache's part of its end, and nothing else.
/// - Threading: the network thread asks about a redirect, a challenge and a `304`; the end arrives on
///   the delivery queue and is settled on the processing queue. The machine is behind its own lock.
final class BackgroundRevalidator: TransferDelegate, Sendable {
    /// A revalidation under way: the cache (alive while its storage is held here) and the key.
    /// - Threading: an immutable value; kept in `running`, under its lock.
    struct Running: Hashable, Sendable {
        let cache: ObjectIdentifier
        let key: String
    }

    /// The revalidations under way, all caches together.
    private static let running = Protected<Set<Running>>([])

    /// Registers `running`; false when it already runs.
    static func begin(_ running: Running) -> Bool {
        self.running.withLock { $0.insert(running).inserted }
    }

    /// Whether a revalidation of `key` in `cache` is under way (for the tests).
    static func isRunning(cache: URLCache, key: URL) -> Bool {
        running.withLock { $0.contains(Running(cache: ObjectIdentifier(cache), key: CacheEntryMetadata.key(for: key))) }
    }

    private let machine: Protected<CacheState>
    private let storage: CacheStorage
    private let registration: Running
    /// When the request went out (RFC 9111 §4.2.3 `request_time`).
    private let requestTime = Date()

    fileprivate init(machine: CacheState, storage: CacheStorage, running: Running) {
        self.machine = Protected(machine)
        self.storage = storage
        registration = running
    }

    func transfer(_ transfer: Transfer, willRedirectTo request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        nil   // not followed: the app's redirect block would decide
    }

    func transfer(_ transfer: Transfer, didReceive head: ResponseHead) {}

    func transfer(_ transfer: Transfer, didReceiveChallenge challenge: AuthenticationChallengeInfo) -> ChallengeResolution {
        .cancel   // no credential of the app's is sent; the entry stays as it is
    }

    func transfer(_ transfer: Transfer, resendsUnconditionallyAfter head: ResponseHead) -> [String]? {
        machine.withLock { $0.notModifiedArrived(head) }
    }

    func transfer(_ transfer: Transfer, didReceiveBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}

    func transfer(_ transfer: Transfer, didSendBytes count: Int, totalBytes: Int64, expectedBytes: Int64) {}

    func transfer(_ transfer: Transfer, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {}

    func transfer(_ transfer: Transfer, didFinishWith outcome: TransferOutcome, batch: CompletionBatch) {
        // Read here, once the network thread wrote its last (see `Transfer`); the storage is file work,
        // kept off the one delivery queue.
        var received: CacheState.Received?
        if case .completed = outcome, let head = transfer.head {
            let body = transfer.body
            received = CacheState.Received(head: head, body: body, finalRequest: nil,
                                           fitsCache: storage.takes(bodyOfSize: body.count),
                                           requestTime: requestTime, responseTime: Date())
        }
        CallbackQueues.processing.async { [self, received] in settle(received) }
    }

    /// Carries out the end's plan on the storage (no cache response block: none is set, see
    /// `BackgroundRevalidation`), then lets the next revalidation of the key run.
    private func settle(_ received: CacheState.Received?) {
        let plan = machine.withLock { $0.transferEnded(with: received) }
        for url in plan.remove { storage.removeStoredResponse(for: url) }
        let candidate = plan.storeCandidate
        if let (stored, keys) = candidate {
            for key in keys { storage.store(stored, forURL: key) }
        }
        machine.withLock { $0.storeEnded(stored: candidate != nil) }
        _ = BackgroundRevalidator.running.withLock { $0.remove(registration) }
    }
}
