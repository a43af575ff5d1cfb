import ArgumentParser
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// Sends the built request through the library's manager and operation, records each hop (redirects
/// and authentication rounds as the library makes them), shows what was selected, and returns
/// httpie's exit status.
final class RequestExchange {
    private let run: RequestRun
    private let plan: RequestPlan
    private let built: BuiltRequest
    private let authentication: RequestRun.Authentication
    private var options: Request { run.options }

    init(run: RequestRun, plan: RequestPlan, built: BuiltRequest, authentication: RequestRun.Authentication) {
        self.run = run
        self.plan = plan
        self.built = built
        self.authentication = authentication
    }

    /// Sends the request and reports: the exit status (0, or 3/4/5 with `--check-status` or a
    /// download); a transport failure throws a `RequestFailure`.
    func perform() throws -> Int32 {
        let outputFile = try openOutputFile()
        let printer = run.printer(download: options.download, handle: outputFile)
        let manager = try makeManager()
        let recorder = HopRecorder(first: built.shown)
        let failure = Locked<Error?>(nil)
        let operation = manager.httpRequestOperation(with: built.request, success: nil, failure: { _, error in failure.set(error) })
        configureHops(of: operation, recorder: recorder)
        let sink = makeSink(for: operation, printer: printer)
        operation.outputStream = sink
        let progress = options.download ? DownloadProgress(resumedBytes: built.resumeOffset,
                                                                name: options.output.map { ($0 as NSString).lastPathComponent } ?? "download") : nil
        if let progress {
            let offset = built.resumeOffset
            operation.setDownloadProgressBlock { _, received, expected in
                progress.progress(received: offset + received, expected: expected >= 0 ? offset + expected : -1)
            }
        }
        if printer.selection.showsRequest { printer.write(built.shown) }
        manager.operationQueue.addOperation(operation)
        operation.waitUntilFinished()   // the handlers ran before the operation turned finished
        let hops = recorder.exchanges
        if options.verbose > 0, options.cacheDirectory != nil {
            // On standard error, as curl's -v tells what it did: standard output stays httpie's. The
            // cache's batch is written first: a response reports `.stored` only once it is.
            ToolCache.flush(operation.urlCache)
            let status = operation.metrics?.cacheStatus ?? .miss
            StandardStreams.write("* cache: \(status.toolDescription)\n", to: .standardError)
        }
        if printer.selection.showsRequest || printer.selection.responseHead {
            writeIntermediateHops(hops, printer: printer)
        }
        if recorder.tooManyRedirects {
            throw RequestFailure(status: 6, message: "Too many redirects (--max-redirects=\(options.maxRedirects)).")
        }
        if let error = failure.value { try fail(with: error, sink: sink, progress: progress) }
        guard let response = operation.response else { throw RequestFailure(status: 1, message: "no response") }
        return try RequestReport(options: options, printer: printer).finish(operation: operation, response: response,
                                                                            sink: sink, progress: progress,
                                                                            resumeOffset: built.resumeOffset)
    }

    /// `--output` without `--download`: the file takes everything shown (httpie's stdout), opened and
    /// truncated before anything is sent so that a missing folder is one line naming it.
    private func openOutputFile() throws -> FileHandle? {
        guard let path = options.output else { return nil }
        if options.download {
            try BodySink.prepare(path: path, truncating: false)   // a download decides on truncation from the response
            return nil
        }
        try BodySink.prepare(path: path, truncating: true)
        guard let handle = FileHandle(forWritingAtPath: path) else {
            throw RequestFailure(status: 1, message: "cannot write '\(path)'")
        }
        return handle
    }

    /// Where the body goes as it arrives, or `nil` to keep it in memory (it is shown formatted, or
    /// after a response head that has to come first).
    private func makeSink(for operation: HTTPRequestOperation, printer: ExchangePrinter) -> BodySink? {
        let response: @Sendable () -> HTTPURLResponse? = { [weak operation] in operation?.response }
        if options.download {
            let target: BodySink.Target = options.output.map { .file(path: $0) }
                ?? (isatty(STDOUT_FILENO) == 1 ? .file(path: nil) : .standardOutput)
            let url = plan.url
            return BodySink(target: target, resumeOffset: built.resumeOffset, decodes: false, keepsOnly2xx: true,
                            response: response, nameFor: { DownloadNaming.fileName(url: url, response: $0) })
        }
        let selection = printer.selection
        // With --cache-dir the body goes through memory: the library neither stores nor serves a body
        // that streams to the caller.
        guard selection.responseBody, !selection.responseHead, !options.all, options.verbose == 0,
              !printer.isTerminal, !printer.formats, options.cacheDirectory == nil else { return nil }
        let target: BodySink.Target = options.output.map { .file(path: $0) } ?? .standardOutput
        return BodySink(target: target, decodes: true, keepsOnly2xx: false, response: response)
    }

    /// The manager: no cache (httpie has none) unless `--cache-dir`, every status delivered,
    /// credentials only as given.
    private func makeManager() throws -> HTTPRequestOperationManager {
        let manager = HTTPRequestOperationManager(baseURL: nil)
        manager.urlCache = try options.cacheDirectory.map { try ToolCache.open($0, option: "--cache-dir") }
        let responseSerializer = HTTPResponseSerializer()
        responseSerializer.acceptableStatusCodes = nil
        manager.responseSerializer = responseSerializer
        manager.completionQueue = DispatchQueue(label: "onet.request.completion")
        manager.shouldUseCredentialStorage = false
        if options.retry > 0 { manager.retryPolicy = RetryPolicy(maxAttempts: options.retry + 1) }
        if case .digest(let user, let password) = authentication {
            manager.credential = URLCredential(user: user, password: password, persistence: .none)
        }
        manager.securityPolicy = try RequestTLS.securityPolicy(options)
        manager.clientCertificate = try RequestTLS.clientCertificate(options)
        manager.proxy = RequestTLS.proxy(options, for: plan.url)
        manager.unixSocketPath = options.unixSocket
        if options.verbose > 0 { manager.eventMonitors = [VerboseRetryMonitor()] }
        return manager
    }

    /// Redirects: followed only with `--follow` (or `--download`), counted against `--max-redirects`;
    /// each hop and each answered challenge recorded as the library makes it.
    private func configureHops(of operation: HTTPRequestOperation, recorder: HopRecorder) {
        let follow = options.follow || options.download
        let limit = options.maxRedirects
        let storage = run.storage
        operation.setRedirectResponseBlock { _, proposed, response in
            recorder.received(response as? HTTPURLResponse)
            if limit > 0 && recorder.countRedirect() == limit {
                recorder.markTooManyRedirects()
                return nil
            }
            guard follow else { return nil }
            recorder.sending(proposed, storage: storage)
            return proposed
        }
        let answers = { if case .digest = self.authentication { return true } else { return false } }()
        operation.setWillSendRequestForAuthenticationChallengeBlock { operation, challenge in
            let response = challenge.failureResponse as? HTTPURLResponse
            recorder.received(response)
            // The library answers the first round with the credential (none is used otherwise).
            guard answers, challenge.previousFailureCount == 0, !challenge.protectionSpace.isProxy() else {
                return (.performDefaultHandling, nil)
            }
            let request = operation.currentRequest
            if challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPDigest {
                // libcurl sends the request once more without credentials and reads the challenge itself.
                recorder.sending(request, storage: storage)
                recorder.received(response)
                recorder.sending(request, storage: storage, extra: [("Authorization", "Digest (computed by libcurl)")])
            } else {
                recorder.sending(request, storage: storage, extra: [("Authorization", "Basic (computed by libcurl)")])
            }
            return (.performDefaultHandling, nil)
        }
    }

    /// The hops before the last (with `--all` or `-v`): each request after the first, each
    /// intermediate response head.
    private func writeIntermediateHops(_ hops: [HopRecorder.Exchange], printer: ExchangePrinter) {
        guard options.all || options.verbose > 0 else { return }
        for (index, hop) in hops.enumerated() {
            if index > 0 { printer.write(hop.request) }
            if index < hops.count - 1, let head = hop.response { printer.write(head) }
        }
    }

    /// A transport failure: httpie's status and one line.
    private func fail(with error: Error, sink: BodySink?, progress: DownloadProgress?) throws -> Never {
        let nsError = error as NSError
        if let failure = sink?.streamError as? RequestFailure { throw failure }
        if options.download, let sink, nsError.code == URLError.networkConnectionLost.rawValue {
            progress?.finish(bytes: sink.bytesWritten, path: sink.path ?? "standard output", ok: false)
            throw RequestFailure(status: 1, message: "Incomplete download: \(ResponsePrinter.describe(nsError))")
        }
        switch nsError.code {
        case URLError.timedOut.rawValue where nsError.domain == NSURLErrorDomain:
            let seconds = options.timeout ?? built.request.timeoutInterval
            throw RequestFailure(status: 2, message: "Request timed out (\(String(format: "%g", seconds))s).")
        case URLError.httpTooManyRedirects.rawValue where nsError.domain == NSURLErrorDomain:
            throw RequestFailure(status: 6, message: "Too many redirects (the library follows at most 16).")
        default:
            throw RequestFailure(status: 1, message: ResponsePrinter.describe(nsError))
        }
    }
}

/// The hops of one request as the library makes them (network thread), read after it finished.
/// - Threading: its state is one value owned by a lock.
final class HopRecorder: Sendable {
    /// One request and the response it got (the last one's response is the operation's).
    struct Exchange {
        var request: SentRequest
        var response: ReceivedHead?
    }

    private struct Record {
        var hops: [Exchange]
        var redirects = 0
        var tooMany = false
    }

    private let record: Locked<Record>

    init(first: SentRequest) {
        record = Locked(Record(hops: [Exchange(request: first)]))
    }

    /// Records the current hop's response head.
    func received(_ response: HTTPURLResponse?) {
        guard let response else { return }
        let head = ReceivedHead(response, version: nil)
        record.update { $0.hops[$0.hops.count - 1].response = head }
    }

    /// Counts a redirect response; returns how many came so far.
    func countRedirect() -> Int {
        record.update { record in
            record.redirects += 1
            return record.redirects
        }
    }

    /// Records the next hop's request as the transport sends it.
    func sending(_ request: URLRequest, storage: HTTPCookieStorage, extra: [(String, String)] = []) {
        let headers = RequestBuilder.wireHeaders(of: request, body: request.httpBody, storage: storage, extra: extra)
        let shown = SentRequest(method: request.httpMethod ?? "GET", url: request.url ?? URL(fileURLWithPath: "/"),
                                headers: headers, body: request.httpBody, bodyNote: nil)
        record.update { $0.hops.append(Exchange(request: shown)) }
    }

    func markTooManyRedirects() { record.update { $0.tooMany = true } }
    var tooManyRedirects: Bool { record.value.tooMany }
    var exchanges: [Exchange] { record.value.hops }
}

/// Tells, on standard error, of each retry the policy makes (`--verbose`).
final class VerboseRetryMonitor: EventMonitor {
    func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        let why = error.map { ResponsePrinter.describe($0 as NSError) } ?? "status \((operation.response as? HTTPURLResponse)?.statusCode ?? 0)"
        StandardStreams.write(String(format: "* retry: attempt %d in %.2f s after %@\n", attempt, delay, why), to: .standardError)
    }
}

extension CacheStatus {
    /// `hit`, `miss`, `revalidated`, `stored` or `not consulted`.
    var toolDescription: String { self == .notConsulted ? "not consulted" : rawValue }
}
