import Foundation
import OperationNetworkingTestServer

/// `onet serve --tls`: a certificate authority and a leaf for 127.0.0.1 and localhost made for this
/// run, and their certificates written as PEM files a client can trust (`--cacert`) or pin
/// (`--pin-cert`, `--pin-key`). The private keys stay in memory: nothing written here is secret.
struct ServeCertificates {
    /// The leaf the server presents, issued by the run's own CA.
    let identity: TestIdentity
    /// The folder both files are in, made for this run and removed by ``remove()``.
    let directory: URL
    /// The CA certificate, PEM: what `onet request --cacert` (or `curl --cacert`) trusts.
    let authorityFile: URL
    /// The server's own certificate, PEM: what `onet request --pin-cert` pins.
    let leafFile: URL

    /// Makes the CA and the leaf and writes both certificates into a new folder under the temporary
    /// directory (`$TMPDIR`, else /tmp).
    init() throws {
        let authority = try TestCertificateAuthority(commonName: "onet serve CA")
        identity = try authority.issue(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        // A folder of its own per run: two servers at once never share or overwrite each other's files.
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        authorityFile = directory.appendingPathComponent("ca.pem")
        leafFile = directory.appendingPathComponent("server.pem")
        try Data(Self.pem(authority.certificate).utf8).write(to: authorityFile)
        try Data(Self.pem(identity.certificate).utf8).write(to: leafFile)
    }

    /// The lines `onet serve` prints after its URL: where each file is and what it is for.
    var description: String {
        """
        CA certificate: \(authorityFile.path) (trust it: onet request --cacert FILE, curl --cacert FILE)
        Server certificate: \(leafFile.path) (pin it: onet request --pin-cert FILE or --pin-key FILE)

        """
    }

    /// Removes the folder and the certificates in it: they name a key that ends with the run.
    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// `der` as one PEM block, base64 in lines of 64 characters.
    static func pem(_ der: Data) -> String {
        let body = der.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN CERTIFICATE-----\n\(body)\n-----END CERTIFICATE-----\n"
    }
}
