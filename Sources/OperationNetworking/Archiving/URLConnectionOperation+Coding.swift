import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Keys of an operation's archive.
enum OperationCodingKeys {
    static let version = CodingVersionKey
    static let url = "request.url"
    static let method = "request.method"
    static let headers = "request.headers"
    static let timeout = "request.timeout"
    static let body = "request.body"
    static let cookies = "request.cookies"
    static let state = "state"
    static let statusCode = "response.statusCode"
    static let responseURL = "response.url"
    static let httpVersion = "response.httpVersion"
    static let responseHeaders = "response.headers"
    static let errorDomain = "error.domain"
    static let errorCode = "error.code"
    static let errorDescription = "error.description"
    static let responseData = "responseData"
    static let partialData = "partialData"
    static let offset = "totalBytesRead"
    static let validator = "resume.validator"
    static let rangesSupported = "resume.rangesSupported"
    static let rangeEnd = "resume.rangeEnd"
    static let totalLength = "resume.totalLength"
    static let shouldUseCredentialStorage = "shouldUseCredentialStorage"
    static let securityPolicy = "securityPolicy"
    static let responseSerializer = "responseSerializer"
    static let unixSocketPath = "unixSocketPath"
}

/// The archived state of an operation.
enum ArchivedState: Int {
    case ready = 1
    case paused = -1
    case finished = 3
}

extension URLConnectionOperation {
    /// Archives the request, the state (an executing operation is paused first and archived paused,
    /// as AFNetworking did), the response head, the error, the body so far and where a download
    /// continues, `shouldUseCredentialStorage`, the security policy and `unixSocketPath`. Never archived: blocks,
    /// queues, streams, `credential`, and a user name and password written in the request's URL (both
    /// URLs are archived without them, see `URL.archivedString`: a restored operation gets its credential
    /// again from the app, like `credential`).
    func encodeArchive(with coder: NSCoder) {
        if isExecuting { pause() }   // an executing operation is archived paused (AFN)
        waitForPauseToSettle()
        let policy = securityPolicy
        let snapshot = state.withLock {
            ($0.request, $0.lifecycle.phase, $0.run.head, $0.run.response as? HTTPURLResponse, $0.run.error,
             $0.run.responseData, $0.configuration.shouldUseCredentialStorage, $0.configuration.unixSocketPath)
        }
        let (request, phase, head, response, error, data, useStorage, socketPath) = snapshot
        coder.encode(SerializationCodingVersion, forKey: OperationCodingKeys.version)
        if let url = request.url { coder.encode(url.archivedString, forKey: OperationCodingKeys.url) }
        coder.encode(request.httpMethod ?? "GET", forKey: OperationCodingKeys.method)
        coder.encodeJSON(request.allHTTPHeaderFields ?? [:], forKey: OperationCodingKeys.headers)
        coder.encode(request.timeoutInterval, forKey: OperationCodingKeys.timeout)
        coder.encode(request.httpShouldHandleCookies, forKey: OperationCodingKeys.cookies)
        if let body = request.httpBody { coder.encode(body as NSData, forKey: OperationCodingKeys.body) }
        // Only kept bytes make a paused archive: a pause that did not settle within the wait (or a
        // resume that overtook it) is archived ready, to start over, never to continue from stale bytes.
        let archived: ArchivedState
        let kept: KeptDownload?
        switch phase {
        case .paused(let bytes), .parked(let bytes?):
            (archived, kept) = (.paused, bytes)
        case .ready, .parked(nil), .startedParked, .cancelledParked, .executing, .intercepting, .answering, .pausing, .cancelling:
            // A cancel on its way has no outcome yet: archived as AFN archived a running operation.
            (archived, kept) = (.ready, nil)
        case .completing, .finished:
            // The outcome is stored (the handlers may still be running): archived finished, with it.
            (archived, kept) = (.finished, nil)
        }
        coder.encode(archived.rawValue, forKey: OperationCodingKeys.state)
        if let head {
            coder.encode(head.statusCode, forKey: OperationCodingKeys.statusCode)
            coder.encode(head.url.archivedString, forKey: OperationCodingKeys.responseURL)
            coder.encode(head.httpVersion, forKey: OperationCodingKeys.httpVersion)
            coder.encodeJSON(head.headerDictionary, forKey: OperationCodingKeys.responseHeaders)
        } else if let response, let url = response.url {
            coder.encode(response.statusCode, forKey: OperationCodingKeys.statusCode)
            coder.encode(url.archivedString, forKey: OperationCodingKeys.responseURL)
            let fields = response.allHeaderFields.reduce(into: [String: String]()) { $0["\($1.key)"] = "\($1.value)" }
            coder.encodeJSON(fields, forKey: OperationCodingKeys.responseHeaders)
        }
        if let error = error as NSError? {
            coder.encode(error.domain, forKey: OperationCodingKeys.errorDomain)
            coder.encode(error.code, forKey: OperationCodingKeys.errorCode)
            coder.encode(URL.removingUserInfo(inText: error.localizedDescription), forKey: OperationCodingKeys.errorDescription)
        }
        if let data { coder.encode(data as NSData, forKey: OperationCodingKeys.responseData) }
        if let kept {
            let resume = kept.point
            coder.encode(kept.bytes as NSData, forKey: OperationCodingKeys.partialData)
            coder.encode(resume.offset, forKey: OperationCodingKeys.offset)
            if let validator = resume.validator { coder.encode(validator, forKey: OperationCodingKeys.validator) }
            coder.encode(resume.rangesSupported, forKey: OperationCodingKeys.rangesSupported)
            if let end = resume.rangeEnd { coder.encode(end, forKey: OperationCodingKeys.rangeEnd) }
            if let total = resume.totalLength { coder.encode(total, forKey: OperationCodingKeys.totalLength) }
        }
        coder.encode(useStorage, forKey: OperationCodingKeys.shouldUseCredentialStorage)
        coder.encode(policy, forKey: OperationCodingKeys.securityPolicy)
        if let socketPath { coder.encode(socketPath, forKey: OperationCodingKeys.unixSocketPath) }
    }

    /// The archived `unixSocketPath` (an operation's or a manager's): `nil` when there is none; a value
    /// that is not a string, or a path with a NUL byte, fails the decoding.
    static func decodeUnixSocketPath(from coder: NSCoder, forKey key: String) -> String? {
        guard let path = coder.decodeChecked(String.self, forKey: key) else { return nil }
        guard !path.utf8.contains(0) else {
            coder.failInvalidValue(forKey: key, expected: "Unix domain socket path (it holds a NUL byte)")
            return nil
        }
        return path
    }

    /// The archived request, or `nil` when the archive has no usable URL.
    static func decodeRequest(from coder: NSCoder) -> URLRequest? {
        guard let url = coder.decodeChecked(String.self, forKey: OperationCodingKeys.url).flatMap({ URL(string: $0) }) else {
            coder.failInvalidValue(forKey: OperationCodingKeys.url, expected: "URL")
            return nil
        }
        var request = URLRequest(url: url)
        request.httpMethod = coder.decodeChecked(String.self, forKey: OperationCodingKeys.method) ?? "GET"
        for (name, value) in coder.decodeJSON([String: String].self, forKey: OperationCodingKeys.headers) ?? [:] {
            request.setValue(value, forHTTPHeaderField: name)
        }
        let owner = URLConnectionOperation.self
        if let timeout = coder.decodeCheckedDouble(forKey: OperationCodingKeys.timeout, of: owner),
           timeout.isFinite && timeout > 0 {
            request.timeoutInterval = timeout
        }
        if let cookies = coder.decodeCheckedBool(forKey: OperationCodingKeys.cookies, of: owner) {
            request.httpShouldHandleCookies = cookies
        }
        request.httpBody = coder.decodeChecked(Data.self, forKey: OperationCodingKeys.body)
        return request
    }

    /// Restores state, response, error, bytes and settings from an archive, onto an operation nothing
    /// was done to yet (otherwise nothing changes).
    func restoreArchive(from coder: NSCoder) {
        let owner = URLConnectionOperation.self
        coder.checkCodingVersion(of: owner)
        let head: ResponseHead? = {
            guard let statusCode = coder.decodeCheckedInteger(forKey: OperationCodingKeys.statusCode, of: owner),
                  let url = coder.decodeChecked(String.self, forKey: OperationCodingKeys.responseURL).flatMap({ URL(string: $0) }) else {
                return nil
            }
            let fields = (coder.decodeJSON([String: String].self, forKey: OperationCodingKeys.responseHeaders) ?? [:])
                .sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
            return ResponseHead(url: url, statusCode: statusCode,
                                httpVersion: coder.decodeChecked(String.self, forKey: OperationCodingKeys.httpVersion) ?? "HTTP/1.1",
                                fields: fields)
        }()
        let error: NSError? = coder.decodeChecked(String.self, forKey: OperationCodingKeys.errorDomain).map {
            NSError(domain: $0, code: coder.decodeCheckedInteger(forKey: OperationCodingKeys.errorCode, of: owner) ?? 0, userInfo: [
                NSLocalizedDescriptionKey: coder.decodeChecked(String.self, forKey: OperationCodingKeys.errorDescription) ?? ""])
        }
        let archivedState = coder.decodeCheckedInteger(forKey: OperationCodingKeys.state, of: owner)
            .flatMap(ArchivedState.init(rawValue:))
        let archivedOffset = coder.decodeCheckedInt64(forKey: OperationCodingKeys.offset, of: owner)
        let paused = archivedState == .paused && archivedOffset != nil
        let offset = archivedOffset ?? 0
        let rangeEnd = coder.decodeCheckedInt64(forKey: OperationCodingKeys.rangeEnd, of: owner)
        // A resume point no transfer could have reached is a tampered archive, not a place to continue
        // from: 2^53 bytes is beyond any real download and keeps every later sum far from overflow.
        let largest: Int64 = 1 << 53
        if !(0...largest).contains(offset) {
            coder.failInvalidValue(forKey: OperationCodingKeys.offset, expected: "resume offset")
        }
        if let rangeEnd, !(offset...largest).contains(rangeEnd) {
            coder.failInvalidValue(forKey: OperationCodingKeys.rangeEnd, expected: "range end (at or after the offset)")
        }
        let total = coder.decodeCheckedInt64(forKey: OperationCodingKeys.totalLength, of: owner)
        if let total, !(offset...largest).contains(total) {
            coder.failInvalidValue(forKey: OperationCodingKeys.totalLength, expected: "total length (at or after the offset)")
        }
        let resume = ResumePoint(offset: min(max(0, offset), largest),
                                 rangeEnd: rangeEnd.flatMap { (offset...largest).contains($0) ? $0 : nil },
                                 validator: coder.decodeChecked(String.self, forKey: OperationCodingKeys.validator),
                                 rangesSupported: coder.decodeCheckedBool(forKey: OperationCodingKeys.rangesSupported, of: owner) ?? false,
                                 totalLength: total.flatMap { (offset...largest).contains($0) ? $0 : nil })
        let partial = coder.decodeChecked(Data.self, forKey: OperationCodingKeys.partialData) ?? Data()
        let useStorage = coder.decodeCheckedBool(forKey: OperationCodingKeys.shouldUseCredentialStorage, of: owner)
        let responseData = coder.decodeChecked(Data.self, forKey: OperationCodingKeys.responseData)
        let policy = coder.decodeChecked(SecurityPolicy.self, forKey: OperationCodingKeys.securityPolicy)
        let socketPath = URLConnectionOperation.decodeUnixSocketPath(from: coder, forKey: OperationCodingKeys.unixSocketPath)
        state.withLock { state in
            // `restore(from:)` is open: on an operation that started (or was paused or cancelled) it
            // changes nothing, rather than overwrite the outcome of a run or the phase under way.
            guard state.lifecycle.acceptsArchivedState else { return }
            if paused {
                // A memory download keeps its bytes; a stream download continues the caller's file.
                _ = state.lifecycle.restorePaused(KeptDownload(point: resume, bytes: partial))
            } else if archivedState == .finished {
                // Finished as it was archived (AFN's encoder wrote it so), its outcome restored below.
                let cancelled = error.map { $0.domain == NSURLErrorDomain && $0.code == NSURLErrorCancelled } ?? false
                _ = state.lifecycle.restoreFinished(cancelled: cancelled)
            }
            state.run.head = head
            state.run.error = paused ? nil : error
            state.run.responseData = responseData
            if let useStorage { state.configuration.shouldUseCredentialStorage = useStorage }
            if let policy { state.configuration.securityPolicy = policy }
            if let socketPath { state.configuration.unixSocketPath = socketPath }
        }
    }

    /// Waits (at most 2 s) for a pause to reach the network thread, so its bytes can be archived. The
    /// pause's settlement is made or found under the operation's lock while the phase says it pauses,
    /// and waited on with no lock held; the transfer's end takes it under the same lock as it changes
    /// the phase, so a pause that settles before the wait begins is not missed.
    private func waitForPauseToSettle() {
        let deadline = DispatchTime.now() + .seconds(2)
        while let settlement = state.withLock({ state -> OneTimeSignal? in
            guard state.lifecycle.isPausing else { return nil }
            if let settlement = state.run.pauseSettlement { return settlement }
            let made = OneTimeSignal()
            state.run.pauseSettlement = made
            return made
        }) {
            if !settlement.wait(until: deadline) { break }
        }
    }
}
