import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPRequestSerializer {
    /// A `multipart/form-data` request: `parameters` become form fields (AFN's flattening; names
    /// written as `MultipartFormData` says: `"`, CR, LF and NUL percent-encoded, the rest as is), then
    /// `block` appends parts; a part header or MIME type it gave that cannot be written throws
    /// `invalidHeader` once it returns. The body is a stream read during the upload, with an
    /// exact `Content-Length` and a random boundary. `GET` and `HEAD` cannot carry a body: they throw;
    /// so do parameters nested deeper than `maximumParameterNestingDepth` (`nestingTooDeep`).
    /// Without any part the request keeps the empty url-encoded body (AFN).
    public func multipartFormRequest(method: String, urlString: String, parameters: Any?,
                                     constructingBodyWith block: ((MultipartFormData) throws -> Void)?) throws -> URLRequest {
        guard method.uppercased() != "GET" && method.uppercased() != "HEAD" else {
            throw LibraryError.requestSerialization(.methodCannotCarryBody, "A \(method) request cannot carry a multipart body.",
                                                    url: URL(string: urlString))
        }
        var request = try self.request(method: method, urlString: urlString, parameters: nil)
        let builder = MultipartFormDataBuilder(requestURL: request.url)
        let encoding = stringEncoding
        var fields: [(name: String, value: Any?)] = []
        if let parameters { fields = try QueryString.flatten(parameters, url: request.url) }
        for (name, value) in fields {
            let data: Data?
            switch value {
            case let bytes as Data: data = bytes
            case nil, is NSNull: data = Data()
            case let other?: data = try QueryString.render(other).data(using: encoding)
            }
            if let data { builder.appendPart(withFormData: data, name: name) }
        }
        try block?(builder)
        if let failure = builder.failure { throw failure }
        guard !builder.parts.isEmpty else { return request }
        let stream = MultipartBodyStream(builder: builder)
        request.httpBody = nil
        request.httpBodyStream = stream
        request.setValue("multipart/form-data; boundary=\(builder.boundary)", forHTTPHeaderField: "Content-Type")
        request.setValue(String(stream.contentLength), forHTTPHeaderField: "Content-Length")
        return request
    }

    /// Writes `request`'s body stream to `fileURL` (on a background queue) and returns the request
    /// without a body stream, headers kept — for servers or tools that need the body as a file.
    /// `completion` runs on the library's callback queue with the first read or write error, if any.
    @preconcurrency
    public func request(withMultipartFormRequest request: URLRequest, writingStreamContentsTo fileURL: URL,
                        completion: (@Sendable (Error?) -> Void)?) -> URLRequest {
        var result = request
        result.httpBodyStream = nil
        let source = request.httpBodyStream
        let job = StreamCopy(source: source, requestURL: request.url, destination: fileURL, completion: completion)
        DispatchQueue.global().async { job.run() }
        return result
    }
}

/// Copies an input stream to a file once; created on the caller's thread, then run on one queue.
/// - Threading: made on the caller's thread, then handed once to a global queue, the only one that
///   uses it; `completion` runs on the library's callback queue.
private final class StreamCopy: @unchecked Sendable {   // handed over once, then used by one thread
    private let source: InputStream?
    /// The URL of the request whose body is copied: the failing URL of the errors about its stream.
    private let requestURL: URL?
    private let destination: URL
    private let completion: (@Sendable (Error?) -> Void)?

    init(source: InputStream?, requestURL: URL?, destination: URL, completion: (@Sendable (Error?) -> Void)?) {
        self.source = source
        self.requestURL = requestURL
        self.destination = destination
        self.completion = completion
    }

    func run() {
        let error = copy()
        let completion = self.completion
        CallbackQueues.callback.async { completion?(error) }
    }

    private func copy() -> Error? {
        guard let source else {
            return LibraryError.requestSerialization(.missingBodyStream, "The request has no body stream.", url: requestURL)
        }
        guard destination.isFileURL, FileManager.default.createFile(atPath: destination.path, contents: nil),
              let output = try? FileHandle(forWritingTo: destination) else {
            return LibraryError.requestSerialization(.cannotCreateFile, "Cannot write \(destination.path).", url: destination)
        }
        defer { try? output.close() }
        source.open()
        defer { source.close() }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBufferPointer { chunk -> Int in
                guard let base = chunk.baseAddress else { return -1 }
                return source.read(base, maxLength: chunk.count)
            }
            if count < 0 {
                return source.streamError ?? LibraryError.requestSerialization(.bodyStreamExhausted,
                                                                               "The request's body stream could not be read.",
                                                                               url: requestURL)
            }
            if count == 0 { return nil }
            do {
                try output.write(contentsOf: buffer[0..<count])
            } catch {
                return error
            }
        }
    }
}
