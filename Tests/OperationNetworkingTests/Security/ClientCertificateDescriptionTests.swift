import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Printing a `ClientCertificate` — `print`, `String(describing:)`, `String(reflecting:)`, `dump`,
/// interpolation, inside an optional or a collection — shows its formats and sizes, never its
/// passphrase nor its private key.
final class ClientCertificateDescriptionTests: LibraryTestCase {
    func testNoDescriptionShowsThePassphraseOrTheKey() throws {
        let passphrase = "open-S3SAME-passphrase"
        let keyMarker = "PRIVATE-KEY-BYTES-MARKER"
        let authority = try TestCertificateAuthority(commonName: "Description Test CA")
        let identity = try authority.issue(commonName: "client", dnsNames: ["client.test"], ipAddresses: [])
        let key = Data("-----BEGIN ENCRYPTED PRIVATE KEY-----\n\(keyMarker)\n-----END ENCRYPTED PRIVATE KEY-----\n".utf8)
        let certificate = ClientCertificate(certificate: Data(CertificateData.pem([identity.certificate]).utf8),
                                            certificateFormat: .pem, privateKey: key, privateKeyFormat: .pem,
                                            passphrase: passphrase)
        var dumped = ""
        dump(certificate, to: &dumped)
        var dumpedInArray = ""
        dump([certificate], to: &dumpedInArray)
        let optional: ClientCertificate? = certificate
        let texts = [String(describing: certificate), String(reflecting: certificate), "\(certificate)",
                     String(describing: optional), String(describing: [certificate]), dumped, dumpedInArray]
        for text in texts {
            XCTAssertFalse(text.contains(passphrase), text)
            XCTAssertFalse(text.contains(keyMarker), text)
            XCTAssertFalse(text.contains("45, 45, 45, 45, 45"), "no key bytes as numbers: \(text)")
        }
        XCTAssertTrue(String(describing: certificate).contains("passphrase: ***"), String(describing: certificate))
        XCTAssertTrue(String(describing: certificate).contains("privateKey: \(key.count) bytes PEM"), String(describing: certificate))
        XCTAssertTrue(dumped.contains("passphrase: \"***\""), dumped)
        let unlocked = ClientCertificate(certificate: certificate.certificate, certificateFormat: .pem,
                                         privateKey: key, privateKeyFormat: .pem)
        XCTAssertTrue(String(describing: unlocked).contains("passphrase: nil"), String(describing: unlocked))
        XCTAssertEqual(certificate.passphrase, passphrase, "the value itself is unchanged")
    }
}
