import CCurl
import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// curl's `CURLAUTH_*` bits (C macros with casts, which Swift does not import).
enum CurlAuth {
    static let basic = 1 << 0
    static let digest = 1 << 1
    static let ntlm = 1 << 3
}

/// A 401/407 challenge the server sent, as the network thread saw it.
struct AuthenticationChallengeInfo {
    /// `true` for 407 (`Proxy-Authenticate`), `false` for 401 (`WWW-Authenticate`).
    let isProxy: Bool
    /// curl's `CURLAUTH_*` bits for the schemes the server offered that curl can answer.
    let schemes: Int
    /// The realm of the first challenge, if any.
    let realm: String?
    /// `NSURLAuthenticationMethodHTTPDigest`, `…HTTPBasic`, `…NTLM` or `…Default`.
    let method: String
    /// Rounds already answered with a credential (0 for the first challenge).
    let previousFailureCount: Int
    /// The challenge response head.
    let head: ResponseHead
    /// For a 407, the proxy that sent it (its protection space is the proxy's, not the server's).
    var proxyURL: URL? = nil
}

/// What the operation decided about a challenge.
enum ChallengeResolution {
    /// Send the request again with this user and password.
    case answer(user: String, password: String)
    /// Stop and deliver the 401/407 as the response.
    case deliver
    /// Stop, deliver the 401/407, and fail with `URLError(.userCancelledAuthentication)`.
    case cancel
}

/// A user and password the transfer answers challenges with (for one origin, or the proxy).
struct TransferCredential {
    var user: String
    var password: String
    var schemes: Int
}

// MARK: - Network thread

extension Transfer {
    /// At most this many challenge rounds; then the 401/407 is delivered.
    static let maxChallengeRounds = 4

    /// Whether the response head just completed is a challenge the library may answer.
    func isAnswerableChallenge(_ head: ResponseHead) -> Bool {
        // A body stream does not stop it: the body is made again, or asked for, once answered (`withFreshBody`).
        guard head.statusCode == 401 || head.statusCode == 407 else { return false }
        return !head.values(for: head.statusCode == 401 ? "WWW-Authenticate" : "Proxy-Authenticate").isEmpty
    }

    /// Reads the challenge out of the head.
    func challengeInfo(_ head: ResponseHead) -> AuthenticationChallengeInfo {
        let isProxy = head.statusCode == 407
        let values = head.values(for: isProxy ? "Proxy-Authenticate" : "WWW-Authenticate")
        var schemes = 0
        for value in values {
            let lowered = value.lowercased()
            for (name, bit) in [("basic", CurlAuth.basic), ("digest", CurlAuth.digest), ("ntlm", CurlAuth.ntlm)]
            where lowered.hasPrefix(name) || lowered.contains(", \(name)") || lowered.contains(",\(name)") {
                schemes |= bit
            }
        }
        let method: String
        if schemes & CurlAuth.ntlm != 0 {
            method = NSURLAuthenticationMethodNTLM
        } else if schemes & CurlAuth.digest != 0 {
            method = NSURLAuthenticationMethodHTTPDigest
        } else if schemes & CurlAuth.basic != 0 {
            method = NSURLAuthenticationMethodHTTPBasic
        } else {
            method = NSURLAuthenticationMethodDefault
        }
        return AuthenticationChallengeInfo(isProxy: isProxy, schemes: schemes, realm: Transfer.realm(in: values),
                                           method: method, previousFailureCount: current.challengeRounds, head: head,
                                           proxyURL: isProxy ? proxyURL(for: currentRequest.url) : nil)
    }

    /// Applies the credentials of earlier challenge rounds to the hop being configured.
    func configureCredentials(_ easy: CurlEasyHandle) throws {
        if let credential = current.serverCredential {
            try easy.set(CURLOPT_USERNAME, credential.user)
            try easy.set(CURLOPT_PASSWORD, credential.password)
            try easy.set(CURLOPT_HTTPAUTH, credential.schemes)
        }
        if let credential = current.proxyCredential {
            try easy.set(CURLOPT_PROXYUSERNAME, credential.user)
            try easy.set(CURLOPT_PROXYPASSWORD, credential.password)
            try easy.set(CURLOPT_PROXYAUTH, credential.schemes)
        }
    }

    /// `realm="…"` of the first challenge that has one.
    private static func realm(in values: [String]) -> String? {
        for value in values {
            guard let start = value.range(of: "realm=\"", options: .caseInsensitive) else { continue }
            let rest = value[start.upperBound...]
            if let end = rest.firstIndex(of: "\"") { return String(rest[..<end]) }
        }
        return nil
    }
}
