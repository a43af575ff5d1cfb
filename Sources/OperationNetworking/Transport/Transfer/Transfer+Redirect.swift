import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Network thread: redirects, decided by the library hop by hop

extension Transfer {
    /// What to do with a redirect response that just completed.
    enum RedirectDecision {
        /// Follow with this request (the delegate may have changed it).
        case follow(URLRequest)
        /// Stop and hand the 3xx to the caller as the response.
        case deliver
        /// Fail the transfer.
        case fail(Error)
    }

    /// Applies the redirect rules (hop limit, method and body by status, credentials kept to one origin),
    /// then lets the delegate's redirect block decide.
    func redirectDecision() -> RedirectDecision {
        guard let head, let currentURL = currentRequest.url,
              let location = hop.headerParser.value(for: "Location"),
              let target = URL(string: location, relativeTo: currentURL)?.absoluteURL else {
            return .deliver   // a Location nobody can follow: the 3xx is the answer
        }
        guard current.redirectCount < Transfer.maxRedirects else {
            return .fail(TransportError.make(.httpTooManyRedirects,
                                             "More than \(Transfer.maxRedirects) redirects.", url: currentURL))
        }
        guard let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return .fail(TransportError.make(.unsupportedURL, "Redirect to an unsupported URL: \(location)",
                                             url: currentURL))
        }
        // The body is looked after once the block decided (`withFreshBody`): it may drop it or set its own.
        guard var chosen = Transfer.redirectedRequest(from: currentRequest, to: target, status: head.statusCode,
                                                     bodyIsReplayable: true) else { return .deliver }
        if let delegate, let response = head.makeResponse() {
            guard let decided = delegate.transfer(self, willRedirectTo: chosen, response: response) else { return .deliver }
            chosen = decided
        }
        guard let sent = withFreshBody(chosen) else { return .fail(bodyStreamExhausted(head.statusCode)) }
        return .follow(sent)
    }

    /// The request for the next hop: method and body by status code, credentials kept to their origin
    /// (`Authorization`, `Proxy-Authorization` and `Cookie` set on the request are dropped for another one).
    /// `nil` when a 307/308 would have to resend a body stream that cannot be replayed.
    static func redirectedRequest(from request: URLRequest, to target: URL, status: Int,
                                  bodyIsReplayable: Bool) -> URLRequest? {
        var next = request
        next.url = target
        let method = request.uppercasedMethod
        let becomesGET = (status == 303 && method != "HEAD" && method != "GET")
            || ((status == 301 || status == 302) && method == "POST")
        if becomesGET {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.httpBodyStream = nil
            next.setValue(nil, forHTTPHeaderField: "Content-Type")
            next.setValue(nil, forHTTPHeaderField: "Content-Length")
        } else if request.httpBodyStream != nil && !bodyIsReplayable {
            return nil
        }
        if !sameOrigin(request.url, target) {
            // A header the app wrote is sent to whoever the next hop reaches: reached directly, another
            // origin would read the proxy's login too. The library's own proxy login (`proxyCredential`)
            // is not a header here and still reaches the proxy.
            next.setValue(nil, forHTTPHeaderField: "Authorization")
            next.setValue(nil, forHTTPHeaderField: "Proxy-Authorization")
            next.setValue(nil, forHTTPHeaderField: "Cookie")
        }
        return next
    }

    /// Scheme, host and port equal (default ports filled in).
    static func sameOrigin(_ a: URL?, _ b: URL?) -> Bool {
        guard let a, let b else { return false }
        func port(_ url: URL) -> Int { url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80) }
        return a.scheme?.lowercased() == b.scheme?.lowercased()
            && a.host?.lowercased() == b.host?.lowercased() && port(a) == port(b)
    }

    /// The redirect is not followed (or the challenge not answered): its head and body become the response.
    func deliverSetAsideResponse() -> Bool {
        guard let head else { return true }
        hop.classify(as: .delivering)
        // The body is complete and held: restarting changes nothing, it replaces what memory held anyway.
        if case .fail(let error) = delegate?.transfer(self, willDeliver: head) ?? .allow {
            refuseResponse(with: error)
            return false
        }
        let setAside = hop.setAsideBody
        hop.setAsideBody = Data()
        if let outputStream {
            guard setAside.withUnsafeBytes({ write($0, to: outputStream) }) else { return false }
        } else {
            current.body = setAside
        }
        current.bytesReceived = Int64(setAside.count)
        current.expectedBodyLength = head.expectedContentLength
        return true
    }
}
