import CFloorCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `--contract`: the per-request work API.md leaves any implementation on corelibs and libcurl, beyond
/// the model's hops and what libcurl does for the library's documented defaults (composite-ae), each
/// done the cheapest way this machine offers. It is a lower bound on a library's own work, not a
/// library: nothing here can be left out by a library that keeps the contract.
///
/// - The operation is given a `URLRequest` (API.md §1), so its URL, method, header fields, timeout
///   and cookie flag must be read from it on every request; the URL is set on a reused easy handle.
/// - Cookies are handled by default (`httpShouldHandleCookies`), and corelibs posts no change
///   notification, so the shared storage is consulted once per loop pass that takes requests: the
///   cheapest read, whether it is empty (bench/README.md, round 5).
/// - The default proxy setting honours the environment's proxy variables, read afresh: once per pass,
///   as the library does, cheaper than libcurl's five `getenv` calls per transfer.
/// - `response` must be available after the operation finishes, so the head is kept whole: in C as
///   it arrives, then copied to the operation (one allocation).
/// - The default response serializer accepts 200-299 (`acceptableStatusCodes`), checked on the
///   delivery queue before the handler runs.
///
/// Left out, though a library pays them too: making a `HTTPURLResponse` (built only when asked for),
/// the body's sink, the operation's own state machine, metrics, errors.
enum ContractWork {
    /// The default serializer's `acceptableStatusCodes`.
    static let acceptableStatusCodes = IndexSet(integersIn: 200..<300)

    /// Per loop pass that takes requests: whether the cookie storage must be read, and the read; and
    /// whether the environment names a proxy (the default proxy setting honours it). Read once per
    /// pass, it lets every handle go direct without libcurl's five `getenv` calls per transfer.
    static func readPerPass(for operations: [FloorOperation]) {
        environmentNamesProxy = floor_environment_names_proxy() != 0
        guard operations.contains(where: { $0.request?.httpShouldHandleCookies ?? false }) else { return }
        cookieStorageIsEmpty = HTTPCookieStorage.shared.cookies?.isEmpty ?? true
    }

    /// What the last pass read of the environment.
    nonisolated(unsafe) static var environmentNamesProxy = false   // loop thread only

    /// What the last pass read, kept so that the read is not optimised away.
    nonisolated(unsafe) static var cookieStorageIsEmpty = true   // loop thread only

    /// Per request: the request's fields read, the URL set on `easy`. False for a request outside what
    /// the composite performs (a GET with no header fields of its own).
    static func configure(_ easy: UnsafeMutableRawPointer, state: UnsafeMutablePointer<floor_handle_state>,
                          from operation: FloorOperation) -> Bool {
        guard let request = operation.request, let url = request.url else { return false }
        let method = request.httpMethod ?? "GET"
        let fields = request.allHTTPHeaderFields ?? [:]
        operation.timeout = request.timeoutInterval
        guard method == "GET", fields.isEmpty else { return false }
        url.absoluteString.withCString { floor_easy_set_url(easy, $0) }
        floor_easy_go_direct(easy, state, environmentNamesProxy ? 0 : 1)
        return true
    }

    /// At the transfer's end, on the loop thread: the kept head copied to the operation, the status noted.
    static func keepResponse(of operation: FloorOperation, status: Int) {
        operation.status = status
        guard let kept = operation.handleState?.pointee, let bytes = kept.bytes else { return }
        operation.head = Array(UnsafeRawBufferPointer(start: bytes, count: kept.length))
    }

    /// On the delivery queue: the default serializer's status check.
    static func validate(_ operation: FloorOperation) {
        operation.accepted = acceptableStatusCodes.contains(operation.status)
    }
}
