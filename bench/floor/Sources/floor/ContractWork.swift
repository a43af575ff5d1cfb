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
/// - A POST (`--method POST`) sends the request's `httpBody` from its own storage, and its header
///   fields become the handle's header lines, made again only when they differ from the last sent.
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
    /// the composite performs (a GET with no header fields of its own, or a POST from `httpBody`).
    static func configure(_ easy: UnsafeMutableRawPointer, state: UnsafeMutablePointer<floor_handle_state>,
                          from operation: FloorOperation, extraHeader: String?, readsBody: Bool) -> Bool {
        guard let request = operation.request, let url = request.url else { return false }
        let method = request.httpMethod ?? "GET"
        let fields = request.allHTTPHeaderFields ?? [:]
        operation.timeout = request.timeoutInterval
        switch method {
        case "GET":
            guard fields.isEmpty else { return false }
        case "POST":
            guard let body = request.httpBody, sendFields(fields, extraHeader: extraHeader, on: easy, state: state) else {
                return false
            }
            // The bytes are sent from the request's own storage, which the operation holds until it ends.
            body.withUnsafeBytes {
                if readsBody {
                    floor_easy_read_body(easy, state, $0.baseAddress, Int64($0.count))
                } else {
                    floor_easy_set_body(easy, $0.baseAddress, Int64($0.count))
                }
            }
        default:
            return false
        }
        url.absoluteString.withCString { floor_easy_set_url(easy, $0) }
        floor_easy_go_direct(easy, state, environmentNamesProxy ? 0 : 1)
        return true
    }

    /// The fields a handle's header lines were last made from.
    private final class SentFields {
        let fields: [String: String]
        init(_ fields: [String: String]) { self.fields = fields }
    }

    /// The caller's header fields as the request's header lines (with `extraHeader`, what the library
    /// adds), made only when they differ from what the handle last sent: the cheapest way to pass on
    /// fields a `URLRequest` may change between requests.
    private static func sendFields(_ fields: [String: String], extraHeader: String?, on easy: UnsafeMutableRawPointer,
                                   state: UnsafeMutablePointer<floor_handle_state>) -> Bool {
        if let sent = state.pointee.sent_fields,
           Unmanaged<SentFields>.fromOpaque(sent).takeUnretainedValue().fields == fields {
            return true
        }
        var lines = fields.map { "\($0.key): \($0.value)" }
        if let extraHeader { lines.append(extraHeader) }
        let made = withCStrings(lines) { floor_easy_set_header_lines(easy, state, $0, $1) } != 0
        if let sent = state.pointee.sent_fields { Unmanaged<SentFields>.fromOpaque(sent).release() }
        state.pointee.sent_fields = made ? Unmanaged.passRetained(SentFields(fields)).toOpaque() : nil
        return made
    }

    /// Calls `body` with `strings` as C strings and their count.
    private static func withCStrings<Result>(_ strings: [String],
                                             _ body: (UnsafePointer<UnsafePointer<CChar>?>?, Int) -> Result) -> Result {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress, $0.count) }
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
