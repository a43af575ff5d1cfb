import Dispatch
import Foundation
import OperationNetworking

/// One run of `onet fetch`: an `HTTPRequestOperation` per file on an `OperationQueue`, each streaming
/// into its file through `outputStream`; Ctrl-C pauses them all and archives them into the state file.
///
/// Lifecycle: `run()` (main thread) builds the operations, enqueues them and waits on `end`. Either
/// every file's handler has recorded an outcome (the last one signals `end`), or SIGINT arrived (the
/// signal source signals `end`); whichever comes first sets `ended`, so the other does nothing. Then the
/// main thread reports and writes the state, or pauses and archives (`interrupt()`).
/// - Threading: the `let`s are immutable after init; what changes is one value owned by a lock.
final class FetchSession: Sendable {
    /// How one file ended.
    enum Outcome {
        /// Saved; the file holds this many bytes.
        case done(Int64)
        /// Not saved; why, in a few words. `resumable` is the paused download this run tried to continue:
        /// its file is cut back to where the archive continues, and the next run tries again from there.
        case failed(String, resumable: (archive: Data, bytes: Int64)?)
    }

    /// Where the files go.
    let directory: URL
    /// The files, in the order given.
    let jobs: [FetchJob]
    /// The progress display.
    let display: FetchDisplay
    /// Entries of the directory's state for URLs this run does not fetch, written back unchanged.
    let carried: [FetchState.Entry]
    private let retry: Int
    /// `--cache-dir`'s cache: the operations that start anew take their bodies in memory through it.
    private let cache: URLCache?
    private let queue = OperationQueue()
    /// One per job, entered at creation, left once the job's outcome was recorded.
    private let settled: [DispatchGroup]
    /// Signalled once: every outcome recorded, or SIGINT.
    private let end = DispatchSemaphore(value: 0)
    /// What the run's threads share.
    private struct Progress {
        var operations: [Int: HTTPRequestOperation] = [:]
        var outcomes: [Int: Outcome] = [:]
        /// Set by whichever came first, the last outcome or SIGINT.
        var ended = false
        var interrupted = false
        /// Kept so the SIGINT source lives as long as the run (a released source stops delivering).
        var signalSource: DispatchSourceSignal?
    }

    private let progress = Locked(Progress())

    /// A run of `jobs` into `directory`, `concurrency` at a time, each retried `retry` times.
    init(jobs: [FetchJob], directory: URL, concurrency: Int, retry: Int, cache: URLCache? = nil,
         carried: [FetchState.Entry] = [], display: FetchDisplay? = nil) {
        self.jobs = jobs
        self.cache = cache
        self.carried = carried
        self.directory = directory
        self.retry = retry
        self.display = display ?? FetchDisplay(files: jobs.map { job in
            switch job.start {
            case .fresh: return (job.name, 0)
            case .paused(_, let bytes), .done(let bytes): return (job.name, bytes)
            }
        })
        settled = jobs.map { _ in DispatchGroup() }
        queue.name = "org.operationnetworking.onet.fetch"
        queue.maxConcurrentOperationCount = concurrency
    }

    /// Runs every job; returns the exit status: 0 all saved, 1 some failed, 130 interrupted.
    func run() -> Int32 {
        installInterruptHandler()
        var enqueued: [HTTPRequestOperation] = []
        for (index, job) in jobs.enumerated() {
            settled[index].enter()
            if case .done(let bytes) = job.start {
                display.message("already complete: \(job.name)")
                record(index, .done(bytes))
                continue
            }
            let operation = makeOperation(index, job)
            progress.update { $0.operations[index] = operation }
            enqueued.append(operation)
        }
        display.start()
        queue.addOperations(enqueued, waitUntilFinished: false)
        if progress.update({ $0.outcomes.count == jobs.count && !$0.ended }) { signalEnd() }
        end.wait()
        if progress.value.interrupted { return interrupt() }
        // Every handler ran; let the operations turn finished (their streams closed) before reporting.
        queue.waitUntilAllOperationsAreFinished()
        return finish()
    }

    // MARK: - Operations

    /// The operation for `job`: new, or restored from its archive to continue with a Range request.
    private func makeOperation(_ index: Int, _ job: FetchJob) -> HTTPRequestOperation {
        let path = directory.appendingPathComponent(job.name).path
        var operation = HTTPRequestOperation(request: FetchSession.request(for: job.url))
        var continued: (archive: Data, bytes: Int64)?
        if case .paused(let archive, let bytes) = job.start {
            do {
                operation = try SafeArchive.unarchive(HTTPRequestOperation.self, from: archive)
                operation.credential = FetchPlan.credential(in: job.url)   // the archive keeps no login
                // An archive taken before its pause settled has no place to continue from: the operation
                // comes back ready and fetches the whole body, which must not land after the old prefix.
                if operation.isPaused {
                    continued = (archive, bytes)
                } else {
                    display.message("onet fetch: \(job.name): the paused download has no resume point; starting over", error: true)
                }
            } catch {
                display.message("onet fetch: \(job.name): the paused download cannot be restored (\(error.localizedDescription)); starting over",
                                error: true)
            }
        }
        let resumable = continued   // appended to, and kept if this continuation fails
        // Through the cache, a body is taken in memory and written once whole; a continuation appends
        // to its file and never touches a cache.
        let cached = cache != nil && resumable == nil
        operation.urlCache = cached ? cache : nil
        if !cached { operation.outputStream = OutputStream(toFileAtPath: path, append: resumable != nil) }
        operation.retryPolicy = RetryPolicy(maxAttempts: retry + 1)
        operation.eventMonitors = [FetchMonitor(index: index, name: job.name, display: display)]
        let display = display
        operation.setDownloadProgressBlock { _, received, expected in
            display.progress(index, received: received, expected: expected)
        }
        operation.setCompletionBlockWithSuccess({ [weak self] operation, _ in
            guard let self else { return }
            if cached {
                let body = operation.responseData ?? Data()
                do {
                    try body.write(to: URL(fileURLWithPath: path))
                } catch {
                    try? FileManager.default.removeItem(atPath: path)
                    self.record(index, .failed("cannot write \(path): \(FetchPlan.reason(error))", resumable: nil))
                    return
                }
            }
            self.record(index, .done(FetchPlan.fileSize(URL(fileURLWithPath: path)) ?? 0))
        }, failure: { [weak self] operation, error in
            guard let self else { return }
            // Cancelled by an interrupt (a body in memory, or a transfer that could not pause): it
            // starts over next time.
            if (error as? URLError)?.code == .cancelled, self.progress.value.interrupted {
                self.settled[index].leave()
                return
            }
            let reason = FetchSession.describe(error, of: operation)
            // A continuation that failed (the server unreachable for now, a 503) keeps what the
            // earlier run saved: the file goes back to the archived length, and the state stays paused.
            if let resumable, FetchSession.truncate(path, to: resumable.bytes) {
                self.record(index, .failed(reason, resumable: resumable))
                return
            }
            try? FileManager.default.removeItem(atPath: path)   // a partial body or an error page
            self.record(index, .failed(reason, resumable: nil))
        })
        return operation
    }

    /// A GET of `url` with the library's default headers (its User-Agent, Accept-Language), as the
    /// request serializer makes it; a plain request if the serializer refuses the URL (it was checked).
    static func request(for url: URL) -> URLRequest {
        (try? HTTPRequestSerializer().request(method: "GET", urlString: url.absoluteString, parameters: nil))
            ?? URLRequest(url: url)
    }

    /// Cuts the file at `path` back to `length` bytes; false if it is shorter or cannot be written.
    static func truncate(_ path: String, to length: Int64) -> Bool {
        guard length >= 0, let size = FetchPlan.fileSize(URL(fileURLWithPath: path)), size >= length,
              let handle = FileHandle(forWritingAtPath: path) else { return false }
        defer { try? handle.close() }
        do {
            try handle.truncate(atOffset: UInt64(length))
            return true
        } catch {
            return false
        }
    }

    /// `HTTP 404`, or the transport error's description, with the attempts when there were several.
    static func describe(_ error: Error, of operation: HTTPRequestOperation) -> String {
        var text: String
        if let status = operation.response?.statusCode, !(200..<300).contains(status) {
            text = "HTTP \(status) \(HTTPURLResponse.localizedString(forStatusCode: status))"
        } else {
            text = error.localizedDescription
        }
        if operation.attempts > 1 { text += " (after \(operation.attempts) attempts)" }
        return text
    }

    /// Records how job `index` ended, tells the display, and ends the run after the last one.
    private func record(_ index: Int, _ outcome: Outcome) {
        let last = progress.update { progress -> Bool in
            progress.outcomes[index] = outcome
            return progress.outcomes.count == jobs.count && !progress.ended
        }
        let job = jobs[index]
        switch outcome {
        case .done(let bytes):
            display.finished(index, ok: true, bytes: bytes)
            if case .done = job.start {} else {
                display.message("saved \(directory.appendingPathComponent(job.name).path) (\(bytes) bytes)")
            }
        case .failed:
            display.finished(index, ok: false, bytes: 0)
        }
        settled[index].leave()
        if last { signalEnd() }
    }

    /// Ends the run unless it already ended; `byInterrupt` when SIGINT did it.
    private func signalEnd(byInterrupt: Bool = false) {
        let first = progress.update { progress -> Bool in
            guard !progress.ended else { return false }
            progress.ended = true
            progress.interrupted = byInterrupt
            return true
        }
        if first { end.signal() }
    }

    // MARK: - Interrupt

    /// Ctrl-C ends the run through `end` instead of killing the process (a DispatchSource sees the
    /// signal only when its default action is off).
    private func installInterruptHandler() {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [weak self] in self?.signalEnd(byInterrupt: true) }
        source.resume()
        progress.update { $0.signalSource = source }
    }

    /// Pauses every transfer, archives the paused operations and the rest of the run into the state
    /// file, and returns 130.
    private func interrupt() -> Int32 {
        queue.isSuspended = true   // nothing new starts while the others are paused
        let current = progress.value.operations
        for operation in current.values where operation.isExecuting {
            // A body in memory (--cache-dir) has no file to continue: that file starts over next time.
            if operation.outputStream == nil { operation.cancel() } else { operation.pause() }
        }
        var entries: [FetchState.Entry] = []
        var paused = 0
        for (index, job) in jobs.enumerated() {
            var entry = entryForOutcome(index, job)
                ?? current[index].flatMap { pausedEntry($0, job) }
                ?? pendingEntry(job)
            if entry.status == .pending, let operation = current[index], operation.isExecuting || operation.isFinished {
                // Ending as the pause came (its handlers running): wait briefly for its outcome.
                _ = settled[index].wait(timeout: .now() + 3)
                entry = entryForOutcome(index, job) ?? entry
                if entry.status == .pending { operation.cancel() }
            }
            if entry.status == .paused { paused += 1 }
            entries.append(entry)
        }
        display.stop()
        do {
            try FetchState(files: entries + carried).save(in: directory)
        } catch {
            display.message("onet fetch: cannot write the state file in \(directory.path): \(FetchPlan.reason(error))", error: true)
            return 130
        }
        let done = entries.filter { $0.status == .done }.count
        let pending = entries.count - done - paused
        display.message("interrupted: \(paused) paused, \(done) done, \(pending) to fetch; state saved in "
                        + "\(directory.appendingPathComponent(FetchState.fileName).path). Run the same command to resume.",
                        error: true)
        return 130
    }

    /// The entry of a job whose outcome was recorded, or `nil`.
    private func entryForOutcome(_ index: Int, _ job: FetchJob) -> FetchState.Entry? {
        switch progress.value.outcomes[index] {
        case .done(let bytes)?:
            return FetchState.Entry(url: job.url.absoluteString, name: job.name, status: .done, bytes: bytes)
        case .failed(_, let resumable?)?:
            return FetchState.Entry(url: job.url.absoluteString, name: job.name, status: .paused, bytes: resumable.bytes,
                                    archive: resumable.archive)
        case .failed?:
            return FetchState.Entry(url: job.url.absoluteString, name: job.name, status: .failed)
        case nil:
            return nil
        }
    }

    /// The entry of a job that has not started (or must start over).
    private func pendingEntry(_ job: FetchJob) -> FetchState.Entry {
        FetchState.Entry(url: job.url.absoluteString, name: job.name, status: .pending)
    }

    /// The entry of a paused operation, with its archive (taken after the pause settled, so the file
    /// size is where the operation continues), or `nil` when it is not paused.
    private func pausedEntry(_ operation: HTTPRequestOperation, _ job: FetchJob) -> FetchState.Entry? {
        guard operation.isPaused, let archive = try? SafeArchive.archive(operation), operation.isPaused else { return nil }
        let bytes = FetchPlan.fileSize(directory.appendingPathComponent(job.name)) ?? 0
        return FetchState.Entry(url: job.url.absoluteString, name: job.name, status: .paused, bytes: bytes, archive: archive)
    }

    // MARK: - End

    /// Reports failures (stderr, one line each), writes or removes the state; the exit status.
    private func finish() -> Int32 {
        display.stop()
        let results = progress.value.outcomes
        var entries: [FetchState.Entry] = []
        var failures = 0
        for (index, job) in jobs.enumerated() {
            if case .failed(let reason, _)? = results[index] {
                failures += 1
                display.message("onet fetch: failed: \(job.url.absoluteString): \(reason)", error: true)
            }
            entries.append(entryForOutcome(index, job) ?? pendingEntry(job))
        }
        // Another list's unfinished files keep the state alive (this run's done entries go with it).
        guard failures > 0 || carried.contains(where: { $0.status != .done }) else {
            FetchState.remove(from: directory)
            return 0
        }
        // Keep the saved files' record, so running the command again fetches only the failed ones.
        try? FetchState(files: entries + carried).save(in: directory)
        return failures > 0 ? 1 : 0
    }
}

/// Tells the display when a file's transfer starts and when it is retried.
/// - Threading: immutable; called on the library's monitor queue.
final class FetchMonitor: EventMonitor {
    /// The job's index in the run.
    let index: Int
    /// The job's file name, for the retry message.
    let name: String
    /// The run's display.
    let display: FetchDisplay

    /// A monitor for job `index`.
    init(index: Int, name: String, display: FetchDisplay) {
        self.index = index
        self.name = name
        self.display = display
    }

    /// Shows the file's bar from its first transfer on.
    func operationDidStart(_ operation: URLConnectionOperation) {
        display.started(index)
    }

    /// Says on stderr that (and why) the file is tried again.
    func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        let status = (operation as? HTTPRequestOperation)?.response?.statusCode
        let why = error?.localizedDescription ?? status.map { "HTTP \($0)" } ?? "retryable response"
        display.message("retrying \(name) (attempt \(attempt) in \(String(format: "%.1f", delay)) s): \(why)", error: true)
    }
}
