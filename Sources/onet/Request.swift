import ArgumentParser
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// `onet request`: one HTTP request, httpie-style, built and sent by the library's manager,
/// serializers and security policy.
struct Request: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Send one HTTP request and print the response body (httpie-style items).",
        discussion: """
        Words after the URL are request items:
          Header:value   a header ('Header:' alone removes a default header)
          name==value    a query parameter (repeated: a[]=1&a[]=2)
          name=value     a JSON string field; a form field with --form
          name:=json     a raw JSON value: n:=1 ok:=true tags:='["a"]'
          name@path      a multipart file part, streamed from disk

        The method defaults to GET, or POST when the items carry a body. GET, HEAD and DELETE put fields in the query string, as the library's request serializers do. The URL may omit http:// (':8080/x' means http://localhost:8080/x).

        The body goes to standard output: pretty, coloured JSON on a terminal, the raw bytes otherwise. --verbose writes the request line and headers (Authorization, Proxy-Authorization and Cookie as ***), the response head and the transfer metrics to standard error.

        Exit status: 0 for a 1xx/2xx response, 3 for 3xx, 4 for 4xx, 5 for 5xx; 2 when no complete response came (connection refused, DNS, TLS or pinning refusal, timeout, a body cut short); 1 when the output file cannot be written; 64 for a usage error.

        Examples:
          onet request httpbin.example/get
          onet request POST :8080/users name=Ada admin:=true X-Trace:abc
          onet request --form :8080/login user=ada password=secret
          onet request :8080/upload avatar@./me.png caption=hello
          onet request --auth ada:secret --verbose https://api.example/me
          onet request --pin-key server.pem --retry 2 https://api.example/health
          onet request --output big.iso example.com/big.iso
          onet request --curl PUT :8080/items/1 name=x
        """)

    @Argument(help: ArgumentHelp("[METHOD] URL [items…]", valueName: "word"))
    var words: [String] = []

    @Flag(help: "Send name=value fields as an application/x-www-form-urlencoded form instead of JSON.")
    var form = false

    @Option(help: ArgumentHelp("Credentials for the server's Basic or Digest challenge.", valueName: "user:password"))
    var auth: String?

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

    @Flag(help: "Accept any certificate chain and host name (pins still apply).")
    var insecure = false

    @Option(help: ArgumentHelp("Seconds to connect, and without progress, before failing (default 60).", valueName: "seconds"))
    var timeout: Double?

    @Option(help: ArgumentHelp("Send a failed GET, HEAD, PUT or DELETE again up to this many times (408, 429, 5xx, transport errors).",
                               valueName: "count"))
    var retry = 0

    @Option(name: [.short, .long], help: ArgumentHelp("Write the body to this file instead of standard output.", valueName: "file"),
            completion: .file())
    var output: String?

    @Flag(name: [.short, .long], help: "Print the request and response heads and the transfer metrics on standard error.")
    var verbose = false

    @Flag(help: "Print the request as a curl command line (secrets as ***) and exit without sending it.")
    var curl = false

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout.isFinite) { throw ValidationError("--timeout must be a positive number of seconds.") }
        if retry < 0 || retry > 100 { throw ValidationError("--retry must be between 0 and 100.") }
        if !pinCertificates.isEmpty && !pinKeys.isEmpty {
            throw ValidationError("--pin-cert and --pin-key exclude each other: pin certificates or public keys.")
        }
        if let auth, !auth.contains(":") { throw ValidationError("--auth must be user:password.") }
        _ = try RequestPlan(words: words, form: form)   // a bad word is a usage error before anything is sent
    }

    func run() throws {
        let plan = try RequestPlan(words: words, form: form)
        let manager = try makeManager()
        let request = try buildRequest(plan, serializer: manager.requestSerializer)
        let failure = Locked<Error?>(nil)
        let operation = manager.httpRequestOperation(with: request, success: nil, failure: { _, error in
            failure.set(error)
        })
        if curl {
            print(operation.curlDescription)
            return
        }
        if let output { operation.outputStream = OutputStream(toFileAtPath: output, append: false) }
        if verbose {
            ResponsePrinter.writeRequestHead(operation.request, to: .standardError)
            operation.eventMonitors = [VerboseRetryMonitor()]
        }
        manager.operationQueue.addOperation(operation)
        operation.waitUntilFinished()   // the handlers ran before the operation turned finished
        try report(operation, error: failure.value)
    }

    /// A manager configured from the options: serializers, credential, security policy, retries.
    private func makeManager() throws -> HTTPRequestOperationManager {
        let manager = HTTPRequestOperationManager(baseURL: nil)
        manager.requestSerializer = form ? HTTPRequestSerializer() : JSONRequestSerializer()
        if let timeout { manager.requestSerializer.timeoutInterval = timeout }
        // Every status reaches the success block: the command reports 4xx and 5xx bodies as they are.
        let responseSerializer = HTTPResponseSerializer()
        responseSerializer.acceptableStatusCodes = nil
        manager.responseSerializer = responseSerializer
        manager.completionQueue = DispatchQueue(label: "onet.request.completion")
        if retry > 0 { manager.retryPolicy = RetryPolicy(maxAttempts: retry + 1) }
        if let auth, let colon = auth.firstIndex(of: ":") {
            manager.credential = URLCredential(user: String(auth[..<colon]), password: String(auth[auth.index(after: colon)...]),
                                               persistence: .none)
        }
        manager.securityPolicy = try makeSecurityPolicy()
        return manager
    }

    /// The security policy the pinning, CA and --insecure options ask for.
    private func makeSecurityPolicy() throws -> SecurityPolicy {
        let policy: SecurityPolicy
        if !pinCertificates.isEmpty {
            policy = SecurityPolicy(pinningMode: .certificate,
                                    withPinnedCertificates: try CertificateFile.load(pinCertificates, option: "--pin-cert"))
        } else if !pinKeys.isEmpty {
            policy = SecurityPolicy(pinningMode: .publicKey,
                                    withPinnedCertificates: try CertificateFile.load(pinKeys, option: "--pin-key"))
        } else {
            policy = SecurityPolicy.default()
        }
        if let cacert { policy.additionalTrustAnchors = try CertificateFile.load([cacert], option: "--cacert") }
        if insecure {
            policy.allowInvalidCertificates = true
            policy.validatesDomainName = false
        }
        return policy
    }

    /// The request the library's serializers build from the plan: the query first (through a plain
    /// serializer, so it lands in the URL whatever the method), then the body.
    private func buildRequest(_ plan: RequestPlan, serializer: HTTPRequestSerializer) throws -> URLRequest {
        for (name, value) in plan.headers { serializer.setValue(value, forHTTPHeaderField: name) }
        var url = plan.url
        if !plan.query.isEmpty {
            let withQuery = try HTTPRequestSerializer().request(method: "GET", urlString: url, parameters: plan.query)
            url = withQuery.url?.absoluteString ?? url
        }
        if !plan.files.isEmpty {
            let fields = plan.fields.compactMapValues { $0 as? String }
            return try serializer.multipartFormRequest(method: plan.method, urlString: url, parameters: fields) { form in
                for file in plan.files {
                    try form.appendPart(withFileURL: URL(fileURLWithPath: file.path), name: file.name)
                }
            }
        }
        return try serializer.request(method: plan.method, urlString: url, parameters: plan.fields.isEmpty ? nil : plan.fields)
    }

    /// Writes the body (and, verbose, the response head and metrics); throws the exit status.
    private func report(_ operation: HTTPRequestOperation, error: Error?) throws {
        let response = operation.response
        if verbose, let response { ResponsePrinter.writeResponseHead(response, metrics: operation.metrics, to: .standardError) }
        if let error = error as NSError? {
            StandardStreams.write("onet: \(ResponsePrinter.describe(error))\n", to: .standardError)
            // Writing the output file is a local failure; anything else means no (complete) response.
            let local = error.domain == NSPOSIXErrorDomain
                || (error.domain == NSURLErrorDomain && error.code == URLError.cannotWriteToFile.rawValue)
            throw ExitCode(local ? 1 : 2)
        }
        guard let response else { throw ExitCode(2) }
        if output == nil, let body = operation.responseData, !body.isEmpty,
           !ResponsePrinter.writeBody(body, contentType: response.value(forHTTPHeaderField: "Content-Type")) {
            StandardStreams.write("onet: the body could not be written to standard output\n", to: .standardError)
            throw ExitCode(1)
        }
        switch response.statusCode {
        case 300..<400: throw ExitCode(3)
        case 400..<500: throw ExitCode(4)
        case 500...: throw ExitCode(5)
        default: return
        }
    }
}

/// Tells, on standard error, of each retry the policy makes (--verbose).
final class VerboseRetryMonitor: EventMonitor {
    func operation(_ operation: URLConnectionOperation, willRetryAfter delay: TimeInterval, attempt: Int, error: Error?) {
        let why = error.map { ResponsePrinter.describe($0 as NSError) } ?? "status \((operation.response as? HTTPURLResponse)?.statusCode ?? 0)"
        StandardStreams.write(String(format: "* retry: attempt %d in %.2f s after %@\n", attempt, delay, why), to: .standardError)
    }
}
