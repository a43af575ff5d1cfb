import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// One run of `onet request`: the plan from the words, the session, the credentials, the request the
/// library sends, and what is shown of it.
final class RequestRun {
    /// The command's options.
    let options: Request
    /// The process's cookie storage (the library's).
    let storage = HTTPCookieStorage.shared

    init(_ options: Request) {
        self.options = options
    }

    /// How the request authenticates.
    enum Authentication {
        case none
        /// An `Authorization` value sent up front (Basic, Bearer).
        case header(String)
        /// A user and password answering the server's Digest challenge.
        case digest(user: String, password: String)
    }

    func execute() throws {
        let stdin = try readStandardInput()
        var plan = try RequestPlan(words: options.words, type: options.requestType, stdin: stdin, raw: options.raw,
                                   defaultScheme: options.defaultScheme)
        var session = try (options.session ?? options.sessionReadOnly).map {
            try RequestSession(name: $0, url: plan.url, hostHeader: plan.itemHeaders.value("Host"),
                               readOnly: options.sessionReadOnly != nil)
        }
        let lease = CookieStorageLease(storage)
        defer { lease.restore() }
        var headers = plan.headers
        if var current = session {
            plan.sessionHeaders = current.headers
            current.installCookies(in: storage, for: plan.url)
            headers = current.keep(plan.headers, storage: storage, url: plan.url)
            session = current
        }
        let authentication = try authenticate(plan, session: &session)
        let built = try RequestBuilder(options: options, plan: plan, storage: storage)
            .build(headers: headers, authentication: authentication)
        if options.curl {
            let operation = HTTPRequestOperation(request: built.request)
            operation.unixSocketPath = options.unixSocket
            if case .digest(let user, let password) = authentication {
                operation.credential = URLCredential(user: user, password: password, persistence: .none)
            }
            print(operation.curlDescription(redactingSecrets: !options.showSecrets))
            return
        }
        var status: Int32 = 0
        if options.offline {
            printer(download: false).write(built.shown)
        } else {
            // A transport error throws (the session is then left as it was, as httpie leaves it).
            status = try RequestExchange(run: self, plan: plan, built: built, authentication: authentication).perform()
        }
        try session?.save(cookiesFrom: storage)
        if status != 0 { throw ExitCode(status) }
    }

    /// Standard input, when it is the body: not `--ignore-stdin`, not a terminal, and open.
    private func readStandardInput() throws -> Data? {
        guard !options.ignoreStdin, isatty(STDIN_FILENO) == 0 else { return nil }
        var status = stat()
        guard fstat(STDIN_FILENO, &status) == 0 else { return nil }   // closed (<&-): no body
        do {
            return try FileHandle.standardInput.readToEnd() ?? Data()
        } catch {
            throw RequestFailure(status: 1, message: "cannot read standard input: \(FetchPlan.reason(error))")
        }
    }

    /// The credentials of `--auth`/`--auth-type`, else of the URL, else of the session; recorded in
    /// the session when given on the command line.
    private func authenticate(_ plan: RequestPlan, session: inout RequestSession?) throws -> Authentication {
        if options.auth != nil || options.authType != nil {
            let type = options.authType ?? .basic
            guard let raw = options.auth else { throw ValidationError("--auth required") }
            session?.stored.auth = RequestSession.Stored.Auth(type: type.rawValue, rawAuth: raw)
            return try authentication(type: type, raw: raw)
        }
        if let credentials = plan.urlCredentials {
            return .header(basic(credentials.user, credentials.password))
        }
        if let stored = session?.stored.auth, let raw = stored.rawAuth, let type = Request.AuthType(rawValue: stored.type ?? "basic") {
            return try authentication(type: type, raw: raw)
        }
        return .none
    }

    private func authentication(type: Request.AuthType, raw: String) throws -> Authentication {
        if type == .bearer { return .header("Bearer \(raw)") }
        var user = raw, password: String
        if let colon = raw.firstIndex(of: ":") {
            user = String(raw[..<colon])
            password = String(raw[raw.index(after: colon)...])
        } else {
            password = try promptPassword(for: user)
        }
        return type == .digest ? .digest(user: user, password: password) : .header(basic(user, password))
    }

    private func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// httpie asks for a password missing from `--auth user`, on the terminal.
    private func promptPassword(for user: String) throws -> String {
        guard !options.ignoreStdin else {
            throw ValidationError("Unable to prompt for passwords because --ignore-stdin is set.")
        }
        guard isatty(STDIN_FILENO) == 1, let typed = getpass("onet: password for \(user): ") else {
            throw ValidationError("--auth \(user): no password, and no terminal to ask for it (give user:password).")
        }
        return String(cString: typed)
    }

    /// The printer for this run's selection: standard output (standard error when downloading, or
    /// the `--output` file).
    func printer(download: Bool, handle: FileHandle? = nil) -> ExchangePrinter {
        let target = handle ?? (download ? FileHandle.standardError : FileHandle.standardOutput)
        let terminal = handle == nil && isatty(download ? STDERR_FILENO : STDOUT_FILENO) == 1
        let pretty = options.pretty ?? (terminal ? .all : Request.Pretty.none)
        var selection = options.selection(outputIsTerminal: terminal)
        if options.quiet > 0 { selection = OutputSelection() }
        return ExchangePrinter(selection: selection, handle: target, isTerminal: terminal,
                               formats: pretty == .all || pretty == .format, colours: pretty == .all || pretty == .colors,
                               showSecrets: options.showSecrets)
    }
}
