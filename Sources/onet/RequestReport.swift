import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// The end of a request that got a response: the final head and body as selected, the download's
/// file, and httpie's exit status.
struct RequestReport {
    let options: Request
    let printer: ExchangePrinter

    /// Shows the response; returns the exit status (3/4/5 with `--check-status` or `--download`).
    func finish(operation: HTTPRequestOperation, response: HTTPURLResponse, sink: BodySink?,
                progress: DownloadProgress?, resumeOffset: Int64) throws -> Int32 {
        printer.write(ReceivedHead(response, version: operation.metrics?.httpVersion))
        let status = exitStatus(for: response.statusCode)
        if options.download {
            try finishDownload(response: response, sink: sink, progress: progress, resumeOffset: resumeOffset, status: status)
        } else if let sink {
            do {
                try sink.finish()
            } catch {
                throw RequestFailure(status: 1, message: "\(error)")
            }
        } else {
            let raw = operation.responseData ?? Data()
            let body: Data
            do {
                body = try BodyDecoder.decoded(raw, contentEncoding: response.value(forHTTPHeaderField: "Content-Encoding"))
            } catch {
                throw RequestFailure(status: 1, message: "\(error)")
            }
            guard printer.writeBody(body, contentType: response.value(forHTTPHeaderField: "Content-Type")) else {
                throw RequestFailure(status: 1, message: "the body could not be written to \(options.output ?? "standard output")")
            }
        }
        if printer.selection.meta && printer.selection.responseBody { StandardStreams.write("\n\n", to: printer.handle) }
        printer.writeMeta(operation.metrics, https: response.url?.scheme?.lowercased() == "https")
        if status != 0 && (isatty(STDOUT_FILENO) == 0 || options.quiet == 1) {
            StandardStreams.write("onet: warning: HTTP \(response.statusCode) \(ResponsePrinter.reasonPhrase(response.statusCode))\n",
                                  to: .standardError)
        }
        return status
    }

    /// httpie's exit status for a response: 3 for a 3xx not followed, 4 for a 4xx, 5 for a 5xx — only
    /// with `--check-status` (or `--download`); 0 otherwise.
    func exitStatus(for code: Int) -> Int32 {
        guard options.checkStatus || options.download else { return 0 }
        switch code {
        case 300..<400 where !(options.follow || options.download): return 3
        case 400..<500: return 4
        case 500..<600: return 5
        default: return 0
        }
    }

    /// A 2xx body is in the file: complete (its length matches the head's), or an error naming both sizes.
    private func finishDownload(response: HTTPURLResponse, sink: BodySink?, progress: DownloadProgress?,
                                resumeOffset: Int64, status: Int32) throws {
        guard let sink, status == 0, (200..<300).contains(response.statusCode) else { return }
        do {
            try sink.finish()
        } catch {
            throw RequestFailure(status: 1, message: "\(error)")
        }
        let prefix = sink.didResume ? resumeOffset : 0
        let downloaded = prefix + sink.bytesWritten
        let path = sink.path ?? "standard output"
        if let declared = response.value(forHTTPHeaderField: "Content-Length").flatMap({ Int64($0) }),
           prefix + declared != downloaded {
            progress?.finish(bytes: downloaded, path: path, ok: false)
            throw RequestFailure(status: 1, message: "Incomplete download: size=\(prefix + declared); downloaded=\(downloaded)")
        }
        progress?.finish(bytes: downloaded, path: path, ok: true)
    }
}

/// The security policy, client certificate and proxy the TLS and network options ask for.
enum RequestTLS {
    /// Pinning (`--pin-cert`, `--pin-key`), extra anchors (`--cacert`, `--verify FILE`), and
    /// `--insecure` / `--verify no`.
    static func securityPolicy(_ options: Request) throws -> SecurityPolicy {
        let policy: SecurityPolicy
        if !options.pinCertificates.isEmpty {
            policy = SecurityPolicy(pinningMode: .certificate,
                                    withPinnedCertificates: try load(options.pinCertificates, option: "--pin-cert"))
        } else if !options.pinKeys.isEmpty {
            policy = SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: try load(options.pinKeys, option: "--pin-key"))
        } else {
            policy = SecurityPolicy.default()
        }
        var anchors = Set<Data>()
        if let cacert = options.cacert { anchors.formUnion(try load([cacert], option: "--cacert")) }
        var insecure = options.insecure
        switch options.verify?.lowercased() {
        case nil, "yes", "true": break
        case "no", "false": insecure = true
        default: anchors.formUnion(try load([options.verify ?? ""], option: "--verify"))
        }
        if !anchors.isEmpty { policy.additionalTrustAnchors = anchors }
        if insecure {
            policy.allowInvalidCertificates = true
            policy.validatesDomainName = false
        }
        return policy
    }

    private static func load(_ paths: [String], option: String) throws -> Set<Data> {
        do {
            return try CertificateFile.load(paths, option: option)
        } catch let error as ValidationError {
            throw RequestFailure(status: 1, message: error.message)
        }
    }

    /// `--cert` (and `--cert-key`, `--cert-key-pass`): the key is in the certificate's file when no
    /// `--cert-key` names another.
    static func clientCertificate(_ options: Request) throws -> ClientCertificate? {
        guard let cert = options.cert else { return nil }
        let key = options.certKey ?? cert
        do {
            return try ClientCertificate(certificateFile: URL(fileURLWithPath: cert), privateKeyFile: URL(fileURLWithPath: key),
                                         passphrase: options.certKeyPass)
        } catch {
            throw RequestFailure(status: 1, message: "--cert: cannot read '\(FileManager.default.isReadableFile(atPath: cert) ? key : cert)': "
                                 + FetchPlan.reason(error))
        }
    }

    /// The `--proxy protocol:URL` entry for `url`'s scheme; the environment's proxies otherwise.
    static func proxy(_ options: Request, for url: URL) -> ProxySetting {
        let scheme = url.scheme?.lowercased() ?? "http"
        for entry in options.proxy {
            guard let colon = entry.firstIndex(of: ":") else { continue }
            let target = String(entry[entry.index(after: colon)...])
            if entry[..<colon].lowercased() == scheme,
               let proxyURL = URL(string: target.contains("://") ? target : "http://" + target) {
                return .proxy(proxyURL)
            }
        }
        return .environment
    }
}
