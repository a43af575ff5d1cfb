import CTestCrypto
import Foundation
import NIOCore
import NIOHTTP1

/// `/auth/basic/<user>/<password>` and `/auth/digest/<user>/<password>`: protected resources.
///
/// Basic compares the `Authorization` header; Digest (RFC 7616, MD5, `qop=auth`) recomputes the
/// client's response from the password. Both answer 401 with a challenge for realm `onet` otherwise,
/// and 200 JSON `{"user": <name>}` when the credentials are right.
extension TestServerHandler {
    /// The nonce every Digest challenge of this server carries (tests need no replay protection).
    static let digestNonce = "0123456789abcdef0123456789abcdef"

    func authRoute(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ segments: [String]) {
        guard segments.count == 4 else { return badRequest(context, request, "use /auth/<basic|digest>/<user>/<password>") }
        let (scheme, user, password) = (segments[1], segments[2], segments[3])
        let authorization = request.record.header("Authorization") ?? ""
        let accepted: Bool
        let challenge: String
        switch scheme {
        case "basic":
            accepted = authorization == "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
            challenge = "Basic realm=\"onet\""
        case "digest":
            accepted = digestMatches(authorization, user: user, password: password, method: request.record.method)
            challenge = "Digest realm=\"onet\", qop=\"auth\", nonce=\"\(TestServerHandler.digestNonce)\", algorithm=MD5"
        default:
            return badRequest(context, request, "unknown scheme \(scheme)")
        }
        if accepted {
            respondText(context, request, .ok, "{\"user\":\"\(user)\"}", contentType: "application/json")
        } else {
            var headers = HTTPHeaders()
            headers.add(name: "WWW-Authenticate", value: challenge)
            respondText(context, request, .unauthorized, "{\"error\":\"unauthorized\"}", contentType: "application/json",
                        headers: headers)
        }
    }

    private func digestMatches(_ header: String, user: String, password: String, method: String) -> Bool {
        guard header.hasPrefix("Digest ") else { return false }
        var fields: [String: String] = [:]
        for part in header.dropFirst(7).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            fields[pair[0].lowercased()] = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        guard fields["username"] == user, fields["realm"] == "onet", fields["nonce"] == TestServerHandler.digestNonce,
              let uri = fields["uri"], let response = fields["response"] else { return false }
        func md5(_ text: String) -> String {
            var digest = [UInt8](repeating: 0, count: 16)
            let bytes = Array(text.utf8)
            guard ctc_md5(bytes, bytes.count, &digest) == 0 else { return "" }
            return digest.map { String(format: "%02x", $0) }.joined()
        }
        let ha1 = md5("\(user):onet:\(password)")
        let ha2 = md5("\(method):\(uri)")
        let expected: String
        if let qop = fields["qop"], let nc = fields["nc"], let cnonce = fields["cnonce"] {
            expected = md5("\(ha1):\(TestServerHandler.digestNonce):\(nc):\(cnonce):\(qop):\(ha2)")
        } else {
            expected = md5("\(ha1):\(TestServerHandler.digestNonce):\(ha2)")
        }
        return expected == response
    }
}

/// `/bearer/TOKEN` and `/refresh/TOKEN`: a resource behind a bearer token, and the endpoint that hands
/// out a new one (for request interceptors).
///
/// `/bearer/TOKEN` answers 200 JSON `{"token": TOKEN}` to a request carrying `Authorization: Bearer
/// TOKEN`, and 401 with `WWW-Authenticate: Bearer realm="onet"` to any other; `?barrier=N` holds each
/// answer until the path got N requests (so that N clients all send before any hears back). `/refresh/TOKEN` answers
/// TOKEN as text, with `X-Request-Count`: the requests the path got so far, this one included
/// (`?status=N`: that status instead, with no token).
extension TestServerHandler {
    func bearerRoute(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ token: String) {
        if let barrier = request.uri.query["barrier"].flatMap({ integer($0, in: 1...10_000) }),
           state.requests.filter({ $0.path == request.record.path }).count < barrier {
            // Looked at again every 50 ms: a test holds 50 answers at once, each look scans every request
            // the server recorded, and every 5 ms that starved the process under ThreadSanitizer.
            return schedule(context, after: 50) { self.bearerRoute(context, request, token) }
        }
        guard request.record.header("Authorization") != "Bearer " + token else {
            return respondText(context, request, .ok, "{\"token\":\"\(headerSafe(token))\"}", contentType: "application/json")
        }
        var headers = HTTPHeaders()
        headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"onet\"")
        respondText(context, request, .unauthorized, "{\"error\":\"unauthorized\"}", contentType: "application/json",
                    headers: headers)
    }

    func refreshRoute(_ context: ChannelHandlerContext, _ request: IncomingRequest, _ token: String) {
        let seen = state.requests.filter { $0.path == request.record.path }.count
        var headers = HTTPHeaders()
        headers.add(name: "X-Request-Count", value: String(seen))
        if let status = request.uri.query["status"].flatMap({ integer($0, in: 400...599) }) {
            return respondText(context, request, HTTPResponseStatus(statusCode: status), "refused", headers: headers)
        }
        respondText(context, request, .ok, token, headers: headers)
    }
}
