import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) import OperationNetworking

/// `onet request`: one HTTP request, spelt as httpie 3.2 spells it and sent as httpie sends it, through
/// the library's manager, operation and security policy.
struct Request: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send one HTTP request, httpie-style: the same words send the same request.",
        discussion: RequestHelp.discussion,
        // -h is httpie's --headers; help is --help only.
        helpNames: [.long])

    @Argument(help: ArgumentHelp("[METHOD] URL [REQUEST_ITEM …]", valueName: "word"))
    var words: [String] = []

    // MARK: Body

    @Flag(name: [.customShort("j"), .long], help: "Data items as a JSON object (the default); sends JSON's Accept and Content-Type even without data.")
    var json = false

    @Flag(name: [.customShort("f"), .long], help: "Data items as a URL-encoded form (a multipart form when a name@file item is given).")
    var form = false

    @Flag(help: "Data items as a multipart form, files or not.")
    var multipart = false

    @Option(help: ArgumentHelp("The body, as given (instead of items or standard input).", valueName: "text"))
    var raw: String?

    @Flag(name: [.customShort("I"), .customLong("ignore-stdin")], help: "Do not read standard input (otherwise, when it is not a terminal, it is the body).")
    var ignoreStdin = false

    @Flag(name: [.customShort("x"), .long], help: "Deflate the body (Content-Encoding: deflate) when that makes it smaller; -xx always.")
    var compress: Int

    @Option(name: .customLong("default-scheme"), help: ArgumentHelp("The scheme of a URL written without one.", valueName: "scheme"))
    var defaultScheme = "http"

    // MARK: Authentication and session

    @Option(name: [.short, .long], help: ArgumentHelp("Credentials: user:password (Basic, sent up front), or the token with --auth-type bearer.",
                                                      valueName: "user:password"))
    var auth: String?

    @Option(name: [.customShort("A"), .customLong("auth-type")], help: "basic (up front), digest (answering the challenge) or bearer.")
    var authType: AuthType?

    @Option(help: ArgumentHelp("Keep headers, credentials and cookies in a session (a name, per host, or a file path).", valueName: "name"))
    var session: String?

    @Option(name: .customLong("session-read-only"), help: ArgumentHelp("Use a session without updating it.", valueName: "name"))
    var sessionReadOnly: String?

    // MARK: Redirects, output, status

    @Flag(name: [.customShort("F"), .long], help: "Follow redirects (not followed by default).")
    var follow = false

    @Option(name: .customLong("max-redirects"), parsing: .unconditional, help: ArgumentHelp("Give up after this many redirect responses (exit 6).", valueName: "n"))
    var maxRedirects = 30

    @Flag(help: "Show the intermediate requests and responses (redirects, challenges) too.")
    var all = false

    @Option(name: [.customShort("p"), .customLong("print")], help: ArgumentHelp("What to show: H request head, B request body, h response head, b response body, m metadata.",
                                                                               valueName: "HBhbm"))
    var printed: String?

    @Flag(name: [.customShort("h"), .customLong("headers")], help: "Show the response head only (-p h).")
    var headersOnly = false

    @Flag(name: [.customShort("b"), .customLong("body")], help: "Show the response body only (-p b).")
    var bodyOnly = false

    @Flag(name: [.customShort("m"), .customLong("meta")], help: "Show the response metadata only: elapsed time and timings (-p m).")
    var metaOnly = false

    @Flag(name: [.short, .long], help: "Show the request and the response (-p HBhb, with --all); -vv adds the metadata.")
    var verbose: Int

    @Flag(name: [.short, .long], help: "Show nothing (warnings included); the exit status still tells.")
    var quiet: Int

    @Option(help: "all, colors, format or none (default: all on a terminal, none otherwise).")
    var pretty: Pretty?

    @Flag(name: [.customShort("S"), .long], help: "Accepted for httpie's sake: onet writes the body as it comes when it is not formatted.")
    var stream = false

    @Flag(name: .customLong("show-secrets"), help: "Show Authorization, Proxy-Authorization and Cookie values as sent (hidden as *** otherwise).")
    var showSecrets = false

    @Flag(name: .customLong("check-status"), help: "Exit 3, 4 or 5 for a 3xx (not followed), 4xx or 5xx response.")
    var checkStatus = false

    @Flag(help: "Print the request and send nothing.")
    var offline = false

    @Flag(help: "Print the request as a curl command line (secrets as ***) and send nothing.")
    var curl = false

    // MARK: Download

    @Flag(name: [.short, .long], help: "Save the body to a file (named from the response, or -o), with a progress bar.")
    var download = false

    @Flag(name: [.customShort("c"), .customLong("continue")], help: "With --download and -o: continue a partial file (Range).")
    var continueDownload = false

    @Option(name: [.short, .long], help: ArgumentHelp("Write the output (the body, unless -p says more) to this file.", valueName: "file"),
            completion: .file())
    var output: String?

    // MARK: Network and TLS

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to connect, and without progress, before failing (exit 2; default 60).",
                                                        valueName: "seconds"))
    var timeout: Double?

    // .unconditional: `--retry -1` is a value to refuse by name, not a missing value.
    @Option(parsing: .unconditional, help: ArgumentHelp("Send a failed GET, HEAD, PUT or DELETE again up to this many times (408, 429, 5xx, transport errors).",
                               valueName: "count"))
    var retry = 0

    @Option(help: ArgumentHelp("protocol:URL — requests of that scheme go through this proxy (repeatable).", valueName: "protocol:url"))
    var proxy: [String] = []

    // curl's spelling: httpie has no such option.
    @Option(name: .customLong("unix-socket"), help: ArgumentHelp(
        "Connect to this Unix domain socket instead of the URL's host, which still names Host (curl's --unix-socket).",
        valueName: "path"), completion: .file())
    var unixSocket: String?

    @Option(help: ArgumentHelp("yes (default), no (accept any certificate), or a CA bundle file to trust.", valueName: "yes|no|file"))
    var verify: String?

    @Option(help: ArgumentHelp("Client certificate (PEM, possibly with its key) for servers that ask for one.", valueName: "file"),
            completion: .file())
    var cert: String?

    @Option(name: .customLong("cert-key"), help: ArgumentHelp("The client certificate's private key.", valueName: "file"), completion: .file())
    var certKey: String?

    @Option(name: .customLong("cert-key-pass"), help: ArgumentHelp("The passphrase of an encrypted key.", valueName: "passphrase"))
    var certKeyPass: String?

    @Option(name: .customLong("pin-cert"), help: ArgumentHelp(
        "Pin this certificate (PEM or DER file; repeatable): the server must present it.", valueName: "file"),
            completion: .file())
    var pinCertificates: [String] = []

    @Option(name: .customLong("pin-key"), help: ArgumentHelp(
        "Pin the public key of this certificate (PEM or DER file; repeatable).", valueName: "file"),
            completion: .file())
    var pinKeys: [String] = []

    @Option(help: ArgumentHelp("Trust these CA certificates (PEM or DER file) besides the system's.", valueName: "file"),
            completion: .file())
    var cacert: String?

    @Flag(help: "Accept any certificate chain and host name (pins still apply); --verify no says the same.")
    var insecure = false

    @Option(name: .customLong("cache-dir"), help: ArgumentHelp(
        "Keep responses in an HTTP cache in this directory (RFC 9111; none by default); -v tells hit, miss, revalidated or stored.",
        valueName: "dir"), completion: .directory)
    var cacheDirectory: String?

    /// `--auth-type`.
    enum AuthType: String, ExpressibleByArgument, CaseIterable {
        case basic, digest, bearer
    }

    /// `--pretty`.
    enum Pretty: String, ExpressibleByArgument, CaseIterable {
        case all, colors, format, none
    }

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout.isFinite) { throw ValidationError("--timeout must be a positive number of seconds.") }
        if !(0...100).contains(retry) { throw ValidationError("--retry must be between 0 and 100 (got \(retry)).") }
        if maxRedirects < 0 { throw ValidationError("--max-redirects must be 0 or more (got \(maxRedirects)).") }
        if !pinCertificates.isEmpty && !pinKeys.isEmpty {
            throw ValidationError("--pin-cert and --pin-key exclude each other: pin certificates or public keys.")
        }
        if [json, form, multipart].filter({ $0 }).count > 1 { throw ValidationError("--json, --form and --multipart exclude each other.") }
        if let printed, OutputSelection(letters: printed) == nil {
            throw ValidationError("Unknown output options: --print=\(printed) (use the letters H, B, h, b and m).")
        }
        if continueDownload && !download { throw ValidationError("--continue only works with --download") }
        if continueDownload && output == nil { throw ValidationError("--continue requires --output to be specified") }
        if certKey != nil && cert == nil { throw ValidationError("--cert-key needs --cert.") }
        for entry in proxy where !entry.contains(":") || entry.hasPrefix(":") {
            throw ValidationError("--proxy '\(entry)': expected protocol:URL (http:http://proxy:3128).")
        }
        if unixSocket?.isEmpty == true { throw ValidationError("--unix-socket needs the socket's path.") }
        if session != nil && sessionReadOnly != nil { throw ValidationError("--session and --session-read-only exclude each other.") }
        if cacheDirectory != nil && download {
            throw ValidationError("--cache-dir does not apply to --download: a download streams to its file, which no cache keeps.")
        }
    }

    func run() throws {
        do {
            try RequestRun(self).execute()
        } catch let failure as RequestFailure {
            // A URL the user typed may carry a password; no error line shows it.
            StandardStreams.write("onet: error: \(URLRedaction.redactingPasswords(in: failure.message))\n", to: .standardError)
            throw ExitCode(failure.status)
        }
    }

    /// The request type the flags choose (`nil`: JSON by default, without JSON's headers when there is no data).
    var requestType: RequestType? { multipart ? .multipart : form ? .form : json ? .json : nil }

    /// What to show, from `--print`, `-h`, `-b`, `-m`, `-v`, `--offline` and whether output is a terminal.
    func selection(outputIsTerminal: Bool) -> OutputSelection {
        let letters: String
        if let printed {
            letters = printed
        } else if headersOnly || bodyOnly || metaOnly {
            letters = (headersOnly ? "h" : "") + (bodyOnly ? "b" : "") + (metaOnly ? "m" : "")
        } else if verbose >= 2 {
            letters = "HBhbm"
        } else if verbose == 1 {
            letters = "HBhb"
        } else if offline {
            letters = "HB"
        } else {
            letters = outputIsTerminal ? "hb" : "b"
        }
        var selection = OutputSelection(letters: letters) ?? OutputSelection()
        if download { selection.responseBody = false }   // the body goes to the file
        return selection
    }
}
