import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) import OperationNetworking

/// Texts `onet` shows about responses and errors: one line for an error, a status's reason phrase.
/// (How `onet request` lays out requests and responses: `ExchangePrinter`.)
enum ResponsePrinter {
    /// One line for an error: its description, curl's own message when it adds something, the URL;
    /// the password of any URL in it as `***`.
    static func describe(_ error: NSError) -> String {
        var text = error.localizedDescription
        if let curl = error.userInfo[CurlErrorMessageKey] as? String, !curl.isEmpty, !text.contains(curl) {
            text += " (\(curl))"
        }
        if let url = (error.userInfo[NSURLErrorFailingURLErrorKey] as? URL)?.absoluteString, !text.contains(url) {
            text += " — \(url)"
        }
        return URLRedaction.redactingPasswords(in: text)
    }

    /// The standard reason phrase of common statuses (the server's own is not kept).
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Content Too Large"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return ""
        }
    }
}

/// Certificates read from the files named by an option, PEM (one or more) or DER. The library's public
/// reader, `SecurityPolicy.certificates(in:)`, takes a directory, and its PEM parser is internal.
enum CertificateFile {
    /// The DER certificates in `paths`; a missing file or one without a certificate is a usage error
    /// naming `option`.
    static func load(_ paths: [String], option: String) throws -> Set<Data> {
        var result = Set<Data>()
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("\(option): cannot read \(path).")
            }
            let found = pemCertificates(data)
            if !found.isEmpty {
                result.formUnion(found)
            } else if data.first == 0x30 {   // a DER SEQUENCE; the policy checks it when it is used
                result.insert(data)
            } else {
                throw ValidationError("\(option): no certificate in \(path) (expected PEM or DER).")
            }
        }
        return result
    }

    /// The base64 blocks between `-----BEGIN CERTIFICATE-----` and `-----END CERTIFICATE-----` lines.
    private static func pemCertificates(_ data: Data) -> [Data] {
        let text = String(decoding: data, as: UTF8.self)
        var result: [Data] = []
        var body: String?
        for line in text.split(whereSeparator: \.isNewline).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line == "-----BEGIN CERTIFICATE-----" {
                body = ""
            } else if line == "-----END CERTIFICATE-----" {
                if let encoded = body, let der = Data(base64Encoded: encoded) { result.append(der) }
                body = nil
            } else if body != nil {
                body? += line
            }
        }
        return result
    }
}
