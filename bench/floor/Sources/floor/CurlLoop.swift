import CFloorCurl
import Foundation

/// What the harness asks of a client through its environment.
enum BenchEnvironment {
    /// True under `BENCH_H2=1` (the HTTP/2 workloads W9 and W10): the loop then speaks HTTP/2 over TLS
    /// and multiplexes, as curl-multi does there.
    static var http2: Bool { ProcessInfo.processInfo.environment["BENCH_H2"] == "1" }
}

/// The floor's loop with real transfers (`floor N C notify --url URL`): the same hops as
/// `NetworkLoop`, but each operation is a GET (with `--method POST`, a POST from memory) that raw
/// libcurl performs on the loop thread, with easy handles set up once and reused the way the harness's
/// curl-multi reuses its own, and the body's bytes only counted. Nothing of a library stands between
/// the model and libcurl, so what it measures is the two composed on one core: what the ceiling
/// formula adds up, paid together, cache and scheduler effects included.
///
/// The inbox guards itself; `pool`, `received` and `failures` are touched only by the loop thread;
/// `multi` is used only by the loop thread except for `curl_multi_wakeup`, which libcurl
/// allows from any thread. Hence `@unchecked Sendable`.
final class CurlLoop: RequestLoop, @unchecked Sendable {
    private let inbox = Inbox()
    private let multi: UnsafeMutableRawPointer
    private let url: String
    /// One more request header line for every request ("Name: value"), or nil.
    private let header: String?
    /// Whether libcurl hands the response's header lines to a callback (one that only counts them).
    private let readsHead: Bool
    /// Idle easy handles, each with its `--contract` or `--read-body` state (nil otherwise). Loop thread
    /// only.
    private var pool: [(UnsafeMutableRawPointer, UnsafeMutablePointer<floor_handle_state>?)] = []
    /// `--method POST`: the body every handle sends without `--contract` (curl-multi's, `bodySize`
    /// bytes of "x"); nil for GET, and under `--contract`, where each request's `httpBody` is sent.
    private let body: UnsafeMutablePointer<CChar>?
    private let bodySize: Int
    /// Bytes counted per successful request besides the response body: the POST body sent, as
    /// curl-multi counts it.
    private let sentPerRequest: Int64
    private let received = UnsafeMutablePointer<Int64>.allocate(capacity: 1)   // loop thread only
    private var failures = 0                                                     // loop thread only
    private let hops = Delivery()

    /// `--contract`: the work API.md leaves any implementation on corelibs (see `ContractWork`).
    private let contract: Bool

    /// `--read-body`: a POST's body goes to libcurl through a read callback (copied into its upload
    /// buffer), as a library streams a body, instead of `CURLOPT_POSTFIELDS`.
    private let readsBody: Bool

    /// Under `BENCH_H2=1`: HTTP/2 over TLS, streams multiplexed (`BenchEnvironment.http2`).
    private let http2 = BenchEnvironment.http2

    /// `--ca-cache`: every handle trusts the CA bundle file alone (`floor_easy_bundle_only`).
    private let cachesCABundle: Bool

    /// `--buffer-size N`: every handle's receive buffer, in bytes (nil: libcurl's 16 KiB).
    private let receiveBufferSize: Int?

    init?(url: String, header: String?, readsHead: Bool, contract: Bool, concurrency: Int, postBodySize: Int?,
          readsBody: Bool, cachesCABundle: Bool, receiveBufferSize: Int?) {
        guard curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK,
              let multi = floor_multi_new(concurrency, http2 ? 1 : 0) else { return nil }
        self.multi = multi
        self.url = url
        self.header = header
        self.readsHead = readsHead
        self.contract = contract
        bodySize = postBodySize ?? 0
        self.readsBody = readsBody && postBodySize != nil
        self.cachesCABundle = cachesCABundle
        self.receiveBufferSize = receiveBufferSize
        sentPerRequest = Int64(bodySize)
        if let postBodySize, !contract {
            let bytes = UnsafeMutablePointer<CChar>.allocate(capacity: max(postBodySize, 1))
            bytes.initialize(repeating: 0x78, count: max(postBodySize, 1))
            body = bytes
        } else {
            body = nil
        }
        received.initialize(to: 0)
    }

    /// Failed transfers so far (a curl error or a status outside 200–399). Read after the run.
    var failedTransfers: Int { failures }
    /// Response body bytes received so far, and POST bodies sent. Read after the run.
    var receivedBytes: Int64 { received.pointee }

    func submit(_ operation: FloorOperation) {
        if inbox.put(operation) { curl_multi_wakeup(multi) }
    }

    /// A new easy handle set up as curl-multi sets up its own; under `--contract` or `--read-body` with
    /// its state in C.
    private func newHandle() -> (UnsafeMutableRawPointer, UnsafeMutablePointer<floor_handle_state>?)? {
        var state: UnsafeMutablePointer<floor_handle_state>?
        if contract || readsBody {
            state = UnsafeMutablePointer<floor_handle_state>.allocate(capacity: 1)
            state?.initialize(to: floor_handle_state(bytes: nil, length: 0, capacity: 0, body: nil, body_size: 0,
                                                     body_offset: 0, direct: 0, headers: nil, sent_fields: nil))
        }
        guard let easy = floor_easy_new(url, received, header, readsHead ? 1 : 0, body != nil ? 1 : 0, http2 ? 1 : 0) else {
            state?.deallocate()
            return nil
        }
        if cachesCABundle { floor_easy_bundle_only(easy) }
        if let receiveBufferSize { floor_easy_buffer_size(easy, receiveBufferSize) }
        if contract, let state { floor_easy_keep_head(easy, state) }
        // The body itself is given per request (`run()`, `ContractWork.configure`), except curl-multi's
        // form, whose one buffer every handle sends.
        if readsBody, let state {
            floor_easy_upload_by_read(easy, state)
        } else if let body {
            floor_easy_set_body(easy, body, Int64(bodySize))
        }
        return (easy, state)
    }

    /// The loop: take new operations onto easy handles, let libcurl work, deliver what ended; sleep in
    /// `curl_multi_poll` (sockets and wake-ups) only when a turn brought nothing and nothing waits.
    func run() {
        var taken: [FloorOperation] = []
        var ended: [FloorOperation] = []
        while true {
            inbox.take(into: &taken, parkingIfNone: false)
            if contract && !taken.isEmpty { ContractWork.readPerPass(for: taken) }
            for operation in taken {
                guard let (easy, state) = pool.popLast() ?? newHandle() else {
                    failures += 1
                    ended.append(operation)
                    continue
                }
                if !contract, readsBody, let state, let body {
                    floor_easy_read_body(easy, state, body, Int64(bodySize))   // from the start again
                }
                if contract, let state {
                    guard ContractWork.configure(easy, state: state, from: operation, extraHeader: header,
                                                 readsBody: readsBody) else {
                        failures += 1
                        pool.append((easy, state))
                        ended.append(operation)
                        continue
                    }
                }
                operation.handleState = state   // back to the pool with its handle at the end
                floor_easy_set_private(easy, Unmanaged.passRetained(operation).toOpaque())
                curl_multi_add_handle(multi, easy)
            }
            let tookAny = !taken.isEmpty
            taken.removeAll(keepingCapacity: true)
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var failed: Int32 = 0
            var status = 0
            while let easy = floor_multi_next_done(multi, &failed, &status) {
                if failed != 0 { failures += 1 } else { received.pointee += sentPerRequest }
                var state: UnsafeMutablePointer<floor_handle_state>?
                if let pointer = floor_easy_private(easy) {
                    let operation = Unmanaged<FloorOperation>.fromOpaque(pointer).takeRetainedValue()
                    state = operation.handleState
                    operation.spendOwnWork(at: 1)
                    if contract { ContractWork.keepResponse(of: operation, status: status) }
                    ended.append(operation)
                }
                curl_multi_remove_handle(multi, easy)
                pool.append((easy, state))
            }
            if !ended.isEmpty {
                hops.deliver(ended)
                ended.removeAll(keepingCapacity: true)
                continue
            }
            if tookAny { continue }
            if inbox.parkIfEmpty() {
                curl_multi_poll(multi, nil, 0, 1000, nil)
                inbox.unpark()
            }
        }
    }
}
