import ArgumentParser
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) import OperationNetworking

/// `onet archive`: what the library archives, written and read by onet itself — a manager saved from
/// options, restored and shown; a paused download (`onet fetch`'s state file, or one archived
/// operation) continued in this process.
struct Archive: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Save a manager's settings to an archive, show one, or continue a paused download.",
        discussion: """
        Exit status: 0; 1 when a file cannot be read or written, is not an archive of the expected kind, or
        the request the command makes (inspect-manager --path, resume-download) fails; 64 for a usage
        error. Every error is one line on standard error naming the file or the URL.

        Examples:
          onet archive save api.archive --base-url https://api.example/v1/ --json --header X-Team:core --retry 2
          onet archive inspect-manager api.archive
          onet archive inspect-manager api.archive --path status --json
          onet archive resume-download downloads/.onet-fetch-state
          onet archive resume-download paused.archive --output file.bin
        """,
        subcommands: [Save.self, InspectManager.self, ResumeDownload.self])

    /// The bytes of `path`, or a one-line error naming it.
    static func read(_ path: String) throws -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ArchiveFailure("cannot read '\(path)': \(FetchPlan.reason(error))")
        }
    }

    /// A restored object of `type` from `path`, or a one-line error naming the file.
    static func restore<T: NSObject & NSSecureCoding>(_ type: T.Type, from path: String, kind: String) throws -> T {
        let data = try read(path)
        do {
            return try SafeArchive.unarchive(type, from: data)
        } catch {
            throw ArchiveFailure("'\(path)' is not \(kind): \((error as NSError).localizedDescription)")
        }
    }
}

/// An `onet archive` failure: one line (`onet: archive: …`), exit status 1.
struct ArchiveFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }

    /// Runs `body`, turning a failure into its line and status 1.
    static func reporting(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch let failure as ArchiveFailure {
            StandardStreams.write("onet: archive: \(URLRedaction.redactingPasswords(in: failure.message))\n", to: .standardError)
            throw ExitCode.failure
        }
    }
}

extension Archive {
    /// Archives a manager configured from options (what `inspect-manager` and an app restore).
    struct Save: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Archive a manager configured from these options.",
            discussion: """
            The archive holds what the library archives of a manager: base URL, request serializer (headers,
            timeout), response serializer, security policy, retry policy, proxy — never a credential.

            Example:
              onet archive save api.archive --base-url https://api.example/v1/ --json --header X-Team:core
            """)

        @Argument(help: "The archive file to write.") var file: String
        @Option(name: .customLong("base-url"), help: "The base URL relative paths resolve against.") var baseURL: String?
        @Flag(help: "Send parameters as JSON (JSONRequestSerializer) rather than a form.") var json = false
        @Option(help: ArgumentHelp("A default header, Name:Value (repeatable).", valueName: "name:value")) var header: [String] = []
        @Option(parsing: .unconditional, help: "Seconds before a request without progress fails.") var timeout: Double?
        @Option(parsing: .unconditional, help: "Retries of a failed idempotent request (408, 429, 5xx, transport errors).")
        var retry = 0
        @Option(help: ArgumentHelp("Every request through this proxy (http://, https://, socks5://).", valueName: "url"))
        var proxy: String?
        @Option(name: .customLong("pin-key"), help: ArgumentHelp("Pin this certificate's public key (PEM or DER).", valueName: "file"))
        var pinKeys: [String] = []
        @Flag(name: .customLong("no-credential-storage"), help: "Never answer a challenge from the shared credential storage.")
        var noCredentialStorage = false

        func validate() throws {
            if let baseURL, FetchPlan.httpURL(baseURL) == nil { throw ValidationError("--base-url: not an http(s) URL: '\(baseURL)'") }
            if let timeout, !(timeout > 0 && timeout.isFinite) { throw ValidationError("--timeout must be a positive number of seconds (got \(timeout))") }
            if !(0...100).contains(retry) { throw ValidationError("--retry must be 0...100 (got \(retry))") }
            for entry in header where !entry.contains(":") || entry.hasPrefix(":") {
                throw ValidationError("--header '\(entry)': expected Name:Value")
            }
            if let proxy, URL(string: proxy)?.host == nil { throw ValidationError("--proxy: not a proxy URL: '\(proxy)'") }
        }

        func run() throws {
            try ArchiveFailure.reporting {
                let manager = HTTPRequestOperationManager(baseURL: baseURL.flatMap(URL.init(string:)))
                let serializer = json ? JSONRequestSerializer() : HTTPRequestSerializer()
                for entry in header {
                    let colon = entry.firstIndex(of: ":") ?? entry.endIndex
                    serializer.setValue(entry[entry.index(after: colon)...].trimmingCharacters(in: .whitespaces),
                                        forHTTPHeaderField: String(entry[..<colon]))
                }
                if let timeout { serializer.timeoutInterval = timeout }
                manager.requestSerializer = serializer
                if retry > 0 { manager.retryPolicy = RetryPolicy(maxAttempts: retry + 1) }
                if let proxy, let url = URL(string: proxy) { manager.proxy = .proxy(url) }
                if !pinKeys.isEmpty {
                    let keys = try CertificateFile.load(pinKeys, option: "--pin-key")
                    manager.securityPolicy = SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: keys)
                }
                manager.shouldUseCredentialStorage = !noCredentialStorage
                let data: Data
                do {
                    data = try SafeArchive.archive(manager)
                } catch {
                    throw ArchiveFailure("the manager could not be archived: \((error as NSError).localizedDescription)")
                }
                do {
                    try data.write(to: URL(fileURLWithPath: file), options: .atomic)
                } catch {
                    throw ArchiveFailure("cannot write '\(file)': \(FetchPlan.reason(error))")
                }
                StandardStreams.write("saved the manager to \(file)\n", to: .standardError)
            }
        }
    }

    /// Restores a manager and shows its settings (and, with `--path`, the status of one GET through it).
    struct InspectManager: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect-manager",
            abstract: "Restore an archived manager and show its settings, sorted.",
            discussion: """
            On a terminal: one 'setting: value' line each, sorted, secrets as ***. Otherwise (or with --json):
            one line of JSON with sorted keys, for scripts. --path makes one GET through the restored manager
            (its status is shown; a failed request exits 1).

            Example:
              onet archive inspect-manager api.archive --path status
            """)
        @Argument(help: "The archive file (onet archive save writes one).") var file: String
        @Option(help: "A path to GET through the restored manager (relative to its base URL).") var path: String?
        @Flag(help: "One line of JSON, sorted keys (the default when standard output is not a terminal).") var json = false

        func run() throws {
            try ArchiveFailure.reporting {
                let manager = try Archive.restore(HTTPRequestOperationManager.self, from: file, kind: "a manager archive")
                var report = ManagerReport(manager)
                if let path { report.status = try ManagerReport.status(of: path, through: manager) }
                if json || isatty(STDOUT_FILENO) == 0 {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    print(String(decoding: try encoder.encode(report), as: UTF8.self))
                } else {
                    print(report.lines.joined(separator: "\n"))
                }
            }
        }
    }
}
