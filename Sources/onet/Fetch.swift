import ArgumentParser
import Foundation

/// `onet fetch`: downloads a list of URLs into a directory, several at a time, with progress bars;
/// Ctrl-C pauses and saves the run, running the same command again resumes it.
struct Fetch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download files into a directory, several at a time, resumable after Ctrl-C.",
        discussion: """
            Each URL becomes one HTTPRequestOperation on an OperationQueue, streaming its body into \
            DIR/<name>, where <name> is the URL's last path component made safe (no path separators, \
            no leading dots; "index" when there is none) and unique (name-1.ext, name-2.ext, ...: a \
            new URL never overwrites an existing file; a URL the state file records keeps its name, and \
            its file starts over when it is not complete or continuable).

            On a terminal, standard error shows a progress bar per active file and a total line (bytes, \
            rate, ETA), redrawn in place; otherwise a plain total line every second. Each saved file is \
            listed on standard output.

            Ctrl-C pauses every transfer, writes DIR/\(FetchState.fileName) (JSON: each URL's file name \
            and status - done, paused, pending or failed - and each paused operation's archive) and exits \
            with status 130. Running the same command again continues each paused file with a Range \
            request, appending to what is on disk (a server without ranges sends it all again and the part \
            already on disk is skipped), skips the files already done, and removes the state file once \
            every file is saved.

            Transport errors (before the body started) and 408/429/5xx answers are retried --retry times \
            with backoff (the library's RetryPolicy); other 4xx are not. \
            Failed files are listed on standard error at the end (one line each) and the exit status is 1; \
            running the command again fetches only those.

            With --cache-dir, responses are kept in an HTTP cache in that directory (RFC 9111, between \
            runs): a file still fresh there is written without the network, a stale one is revalidated. \
            Each body then passes through memory before its file is written (the cache keeps none that \
            streams), so use it for many small files; a file interrupted by Ctrl-C starts over.

            Examples:
              onet fetch --from urls.txt --to downloads
              onet fetch --to isos --retry 3 https://host/a.iso https://host/b.iso
              onet fetch --from urls.txt --to downloads --concurrency 8
              onet fetch --from urls.txt --to downloads   # again after Ctrl-C: resumes
            """)

    /// `--from`: the file of URLs, read before the positional ones.
    @Option(name: .long, help: ArgumentHelp("A file of URLs, one a line (blank lines and # comments skipped).",
                                            valueName: "file"))
    var from: String?

    /// `--to`: the target directory; required (the parser names it when it is missing).
    @Option(name: .long, help: ArgumentHelp("The directory the files go into (created when missing).", valueName: "dir"))
    var to: String

    /// `--concurrency`: the queue's `maxConcurrentOperationCount`.
    // .unconditional: a negative number is a value to refuse by name, not a missing value.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("How many files download at the same time.", valueName: "n"))
    var concurrency = 4

    /// `--retry`: attempts after the first, through each operation's `RetryPolicy`.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("How many times a failed file is tried again (transport errors, 408, 429, 5xx).",
                                            valueName: "n"))
    var retry = 0

    /// `--cache-dir`: the HTTP cache's directory; none by default.
    @Option(name: .customLong("cache-dir"), help: ArgumentHelp("Keep responses in an HTTP cache in this directory (none by default).",
                                                               valueName: "dir"), completion: .directory)
    var cacheDirectory: String?

    /// URLs given on the command line.
    @Argument(help: "URLs to fetch, after those of --from.")
    var urls: [String] = []

    /// Checks everything that can be checked before touching the network; each error names its argument.
    func validate() throws {
        guard !to.isEmpty else { throw ValidationError("--to: the directory must not be empty") }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1 (got \(concurrency))") }
        guard (0...100).contains(retry) else { throw ValidationError("--retry must be 0...100 (got \(retry))") }
        _ = try FetchPlan.urls(from: from, arguments: urls)
    }

    /// Plans the run against the directory's state, runs it, exits with its status.
    func run() throws {
        let list = try FetchPlan.urls(from: from, arguments: urls)
        let directory = URL(fileURLWithPath: to, isDirectory: true).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("--to: cannot create '\(directory.path)': \(FetchPlan.reason(error))")
        }
        let state = try FetchState.load(from: directory)
        let cache = try cacheDirectory.map { try ToolCache.open($0, option: "--cache-dir") }
        let (jobs, carried) = FetchPlan.jobs(for: list, in: directory, state: state)
        let status = FetchSession(jobs: jobs, directory: directory, concurrency: concurrency, retry: retry,
                                  cache: cache, carried: carried).run()
        if status != 0 { throw ExitCode(status) }
    }
}
