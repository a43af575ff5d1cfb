import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The codes of errors in `RequestSerializationErrorDomain`: a request that cannot be built.
///
/// Where Foundation has a code of the same meaning, the raw value is that `NSURLError` number (the
/// code AFNetworking used), so `error.code == NSURLErrorCannotDecodeRawData` keeps working.
/// - Threading: an immutable value.
public enum RequestSerializationErrorCode: Int, Sendable {
    /// Parameters that cannot be encoded: NaN or an infinity, a value JSON or a property list cannot
    /// hold (`NSURLErrorCannotDecodeRawData`).
    case unencodableParameters = -1015
    /// A multipart part's stream ended before the length it declared (`NSURLErrorRequestBodyStreamExhausted`).
    case bodyStreamExhausted = -1021
    /// The file a multipart body is written to cannot be created (`NSURLErrorCannotCreateFile`).
    case cannotCreateFile = -3000
    /// A header name or value contains CR, LF or NUL (header injection).
    case invalidHeader = 1
    /// A multipart body was asked for a method that carries no body (`GET`, `HEAD`).
    case methodCannotCarryBody = 2
    /// A multipart file part was given a URL that is not a `file:` URL.
    case notAFileURL = 3
    /// A multipart file part names a file that does not exist or cannot be read.
    case fileNotReadable = 4
    /// A request without a body stream was given to `request(withMultipartFormRequest:writingStreamContentsTo:completion:)`.
    case missingBodyStream = 5
    /// Parameters nested more deeply than `HTTPRequestSerializer.maximumParameterNestingDepth` arrays,
    /// dictionaries and sets: refused before any encoder recurses into them (a deep enough value would
    /// otherwise overflow the stack).
    case nestingTooDeep = 6
    /// The request's method is not an HTTP token (RFC 9110 §9.1): empty, or with a space, CR, LF,
    /// NUL or another character that would break the request line. Refused before any connection.
    case invalidMethod = 7
}

/// The codes of errors in `ArchiveErrorDomain`: an archive `SafeArchive.unarchive(_:from:)` refuses.
/// - Threading: an immutable value.
public enum ArchiveErrorCode: Int, Sendable {
    /// Larger than `SafeArchive.maximumSize`; refused unread.
    case tooLarge = 1
    /// Names a class other than the library's archivable ones.
    case unexpectedClass = 2
    /// Not a well-formed keyed archive (truncated, corrupted, not a binary property list).
    case damaged = 3
    /// Well formed, but its root object is not of the requested class.
    case wrongRootClass = 4
    /// A value of the wrong type or out of range where a setting was expected (a tampered archive):
    /// refused rather than decoded into an object whose settings silently differ.
    case invalidValue = 5
}

/// Builds the errors the library creates outside the transport (the transport's are `TransportError`'s),
/// so each has its domain, a named code, a description and the failing URL where there is one.
///
/// - Threading: pure functions; any thread.
enum LibraryError {
    /// Foundation's failing-URL-string key (what `URLError.failureURLString` reads); its constant is
    /// deprecated in corelibs, the key itself is not.
    static let failingURLStringKey = "NSErrorFailingURLStringKey"

    /// An error in `RequestSerializationErrorDomain`.
    static func requestSerialization(_ code: RequestSerializationErrorCode, _ description: String, url: URL? = nil,
                                     underlying: Error? = nil) -> NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url {
            info[NSURLErrorFailingURLErrorKey] = url
            info[failingURLStringKey] = url.absoluteString
        }
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return NSError(domain: RequestSerializationErrorDomain, code: code.rawValue, userInfo: info)
    }

    /// `URLError(.badURL)` for a string that is not an absolute http(s) URL, wherever it is found
    /// (serializer, manager or transport), with the string under `NSURLErrorFailingURLStringErrorKey`.
    static func badURL(_ string: String) -> URLError {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey: "\"\(string)\" is not a valid URL.",
            failingURLStringKey: string,
        ]
        if let url = URL(string: string) { info[NSURLErrorFailingURLErrorKey] = url }
        return URLError(.badURL, userInfo: info)
    }

    /// The error for a header that would inject lines into the request.
    static func invalidHeader(_ name: String, url: URL?) -> NSError {
        requestSerialization(.invalidHeader, "The header \"\(name)\" contains CR, LF or NUL, which a header cannot carry.",
                             url: url)
    }

    /// The error for a method that is not an HTTP token (it would inject into the request line).
    static func invalidMethod(_ method: String, url: URL?) -> NSError {
        requestSerialization(.invalidMethod, "The method \(method.debugDescription) is not an HTTP token (RFC 9110 §9.1): "
                             + "only letters, digits and !#$%&'*+-.^_`|~ may form a method.", url: url)
    }

    /// The error for parameters nested deeper than `limit`.
    static func nestingTooDeep(limit: Int, url: URL?) -> NSError {
        requestSerialization(.nestingTooDeep, "The parameters nest arrays, dictionaries and sets more than \(limit) levels deep "
                             + "(HTTPRequestSerializer.maximumParameterNestingDepth).", url: url)
    }

    /// An error in `ArchiveErrorDomain`.
    static func archive(_ code: ArchiveErrorCode, _ description: String, underlying: Error? = nil) -> NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let underlying { info[NSUnderlyingErrorKey] = underlying }
        return NSError(domain: ArchiveErrorDomain, code: code.rawValue, userInfo: info)
    }
}
