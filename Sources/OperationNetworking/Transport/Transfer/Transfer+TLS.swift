import CCurl
import CCurlShim
import CTrust
import Foundation

// MARK: - Network thread: enforcing the SecurityPolicy before the first request byte

/// `CURLOPT_PREREQFUNCTION`: runs once the connection is up (new or reused), before the request is
/// sent. Installed on every transfer: a transfer cancelled meanwhile sends nothing, and a pinning
/// policy, or a subclass's `evaluateServerTrust`, decides here from the presented chain.
let curlPrerequestCallback: curl_prereq_callback = { userdata, primaryIP, localIP, primaryPort, localPort in
    guard let owner = callbackOwner(userdata) else { return Int32(CURL_PREREQFUNC_ABORT) }
    let transfer = Unmanaged<Transfer>.fromOpaque(owner).takeUnretainedValue()
    if transfer.isCancelRequested { return Int32(CURL_PREREQFUNC_ABORT) }
    guard transfer.hop.pinsCertificates else { return Int32(CURL_PREREQFUNC_OK) }
    let connection = "\(primaryIP.map { String(cString: $0) } ?? "?"):\(primaryPort)<-"
        + "\(localIP.map { String(cString: $0) } ?? "?"):\(localPort)"
    return transfer.serverIsTrusted(connection: connection) ? Int32(CURL_PREREQFUNC_OK) : Int32(CURL_PREREQFUNC_ABORT)
}

/// Connections whose server a pinning policy or a subclass's `evaluateServerTrust` accepted, so a
/// reused connection (which presents no certificates again) is accepted for the same policy only.
/// - Threading: network thread only (owned by `NetworkThread`).
final class TrustedConnections {
    /// A connection and the policy that accepted it. The settings are compared whole, not by hash,
    /// so no collision lets a connection accepted under one policy serve another; a subclass
    /// instance is told apart by its serial number (two instances with equal settings may decide
    /// differently), which also keeps the instance itself out of the set.
    struct Key: Hashable {
        let settings: SecurityPolicy.Snapshot
        let evaluator: UInt64?
        let connection: String

        init(policy: SecurityPolicy.Snapshot, connection: String) {
            var settings = policy
            settings.evaluator = nil
            self.settings = settings
            self.evaluator = policy.evaluator?.serialNumber
            self.connection = connection
        }
    }

    private var accepted: Set<Key> = []
    private var order: [Key] = []
    private static let capacity = 4096

    func contains(_ key: Key) -> Bool { accepted.contains(key) }

    func insert(_ key: Key) {
        guard accepted.insert(key).inserted else { return }
        order.append(key)
        if order.count > TrustedConnections.capacity {
            accepted.remove(order.removeFirst())
        }
    }
}

/// `CURLOPT_SSL_CTX_FUNCTION` for policies that add anchors: the new connection verifies against the
/// transfer's `TrustStore` (the system bundle and the anchors, parsed once per process), not a bundle
/// parsed again for every handshake. `userptr` is the store, kept alive by the transfer.
let curlInstallTrustStore: curl_ssl_ctx_callback = { _, sslContext, store in
    guard let sslContext, let store, ctrust_install_store(sslContext, store) == 1 else { return CURLE_SSL_CACERT_BADFILE }
    return CURLE_OK
}

extension Transfer {
    /// TLS options for the current hop from the operation's policy and client certificate.
    func configureTLS(_ easy: CurlEasyHandle, url: URL) throws {
        guard hop.tlsOrigin != nil else { return }   // the hop is https
        // Trust comes from the CA bundle file alone (Debian's libcurl also names /etc/ssl/certs, the
        // same certificates hashed one per file). Without a directory, libcurl keeps the parsed
        // bundle in the multi handle's CA cache instead of reading and parsing it for every connection.
        try easy.set(CURLOPT_CAPATH, pointer: nil)
        if let certificate = settings.clientCertificate {
            try setBlob(easy, CURLOPT_SSLCERT_BLOB, certificate.certificate)
            try easy.set(CURLOPT_SSLCERTTYPE, certificate.certificateFormat.rawValue)
            try setBlob(easy, CURLOPT_SSLKEY_BLOB, certificate.privateKey)
            try easy.set(CURLOPT_SSLKEYTYPE, certificate.privateKeyFormat.rawValue)
            if let passphrase = certificate.passphrase { try easy.set(CURLOPT_KEYPASSWD, passphrase) }
        }
        guard let policy = settings.security, !policy.isSystemDefault else { return }
        if policy.evaluator != nil {
            // The subclass's own evaluateServerTrust decides, whatever its settings say.
            try decideInPrerequest(easy, policy)
            return
        }
        if policy.allowInvalid && policy.validatesDomainName && (policy.mode == .none || policy.pinned.isEmpty) {
            throw TransportError.make(.serverCertificateUntrusted,
                                      "allowInvalidCertificates with validatesDomainName needs pinned certificates.",
                                      url: url)
        }
        switch policy.mode {
        case .none:
            if policy.allowInvalid {
                try easy.set(CURLOPT_SSL_VERIFYPEER, false)
                try easy.set(CURLOPT_SSL_VERIFYHOST, 0)
                return
            }
            try easy.set(CURLOPT_SSL_VERIFYHOST, policy.validatesDomainName ? 2 : 0)
            if !policy.anchors.isEmpty { try installAnchors(easy, policy.anchors, url: url) }
        case .publicKey, .certificate:
            try decideInPrerequest(easy, policy)
        }
    }

    /// Verification against the system bundle plus `anchors`, through a store built once for them. The
    /// anchors also go to curl as the CA blob: curl reuses a connection only for the same CA settings,
    /// so a connection verified with these anchors never serves a transfer without them.
    private func installAnchors(_ easy: CurlEasyHandle, _ anchors: Set<Data>, url: URL) throws {
        guard let store = TrustStore.store(anchors: anchors, includesSystem: true) else {
            throw TransportError.make(.serverCertificateUntrusted,
                                      "An additional trust anchor is not a certificate.", url: url)
        }
        hop.trustStore = store
        try setBlob(easy, CURLOPT_CAINFO_BLOB, store.anchorsPEM)
        try easy.set(CURLOPT_SSL_CTX_FUNCTION) { ccurl_easy_setopt_ssl_ctx_function($0, curlInstallTrustStore) }
        try easy.set(CURLOPT_SSL_CTX_DATA, pointer: store.raw)
    }

    /// Leaves the decision to the pre-request callback, from the presented chain.
    private func decideInPrerequest(_ easy: CurlEasyHandle, _ policy: SecurityPolicy.Snapshot) throws {
        try easy.set(CURLOPT_SSL_VERIFYPEER, false)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 0)
        try easy.set(CURLOPT_CERTINFO, true)
        // A resumed TLS session presents no certificates; every new connection must show its chain.
        try easy.set(CURLOPT_SSL_SESSIONID_CACHE, false)
        // Distinct per policy, so curl never reuses a connection another policy accepted.
        try setBlob(easy, CURLOPT_CAINFO_BLOB, policyMarker(policy))
        hop.pinsCertificates = true
    }

    /// The decision for the connection just made or reused (the pinning rules, or the subclass's
    /// `evaluateServerTrust`); records why on refusal.
    func serverIsTrusted(connection: String) -> Bool {
        assertOnItsThread()
        guard let policy = settings.security, let easy, let url = currentRequest.url else { return true }
        let key = TrustedConnections.Key(policy: policy, connection: connection)
        let chain = presentedChain(easy)
        if chain.isEmpty {
            if network?.trustedConnections.contains(key) == true { return true }
            refuse("The server presented no certificate to check.", url: url)
            return false
        }
        let trusted = policy.evaluator.map { $0.policy.evaluateServerTrust(chain, forDomain: url.host) }
            ?? SecurityPolicy.evaluate(policy, chain: chain, domain: url.host)
        guard trusted else {
            refuse(SecurityPolicy.refusalReason(policy, chain: chain, domain: url.host), url: url)
            return false
        }
        network?.trustedConnections.insert(key)
        return true
    }

    private func refuse(_ message: String, url: URL) {
        current.abortError = TransportError.make(.serverCertificateUntrusted, message, url: url)
    }

    /// The certificates the server sent (leaf first), from `CURLINFO_CERTINFO`.
    private func presentedChain(_ easy: CurlEasyHandle) -> [Data] {
        var pointer: UnsafeMutableRawPointer?
        guard ccurl_easy_getinfo_ptr(easy.raw, CURLINFO_CERTINFO, &pointer) == CURLE_OK, let pointer else { return [] }
        let info = pointer.assumingMemoryBound(to: curl_certinfo.self).pointee
        guard info.num_of_certs > 0, let lists = info.certinfo else { return [] }
        var chain: [Data] = []
        for index in 0..<Int(info.num_of_certs) {
            var item = lists[index]
            while let node = item {
                if let text = node.pointee.data.map({ String(cString: $0) }), text.hasPrefix("Cert:") {
                    chain.append(contentsOf: CertificateData.fromPEM(Data(text.dropFirst(5).utf8)))
                }
                item = node.pointee.next
            }
        }
        return chain
    }

    private func policyMarker(_ policy: SecurityPolicy.Snapshot) -> String {
        "# OperationNetworking policy mode=\(policy.mode.rawValue) invalid=\(policy.allowInvalid) "
            + "host=\(policy.validatesDomainName)" + (policy.evaluator.map { " evaluator=\($0.serialNumber)" } ?? "") + "\n"
            + CertificateData.pem(policy.pinned.sorted(by: Transfer.byBytes))
            + CertificateData.pem(policy.anchors.sorted(by: Transfer.byBytes))
    }

    private static func byBytes(_ a: Data, _ b: Data) -> Bool {
        a.lexicographicallyPrecedes(b)
    }

    private func setBlob(_ easy: CurlEasyHandle, _ option: CURLoption, _ text: String) throws {
        try setBlob(easy, option, Data(text.utf8))
    }

    private func setBlob(_ easy: CurlEasyHandle, _ option: CURLoption, _ bytes: some ContiguousBytes) throws {
        try easy.set(option) { raw in bytes.withUnsafeBytes { ccurl_easy_setopt_blob(raw, option, $0.baseAddress, $0.count) } }
    }
}
