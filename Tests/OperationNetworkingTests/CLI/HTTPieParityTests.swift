import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Issue 46's check, run the way the differences were found: httpie 3.2 and `onet request` get the
/// same words against the same recording server, and what the server received (normalised only for
/// the User-Agent and random tokens) and the exit statuses are compared. Every invocation that
/// differs must be one of `ParityCases.deliberate`, each a row of the table in `onet request --help`.
final class HTTPieParityTests: ServerTestCase {
    private func runner(tls: TestServer? = nil) throws -> ParityRunner {
        // The test needs httpie: scripts/setup installs it, so its absence is a failure, not a skip.
        guard FileManager.default.isExecutableFile(atPath: ParityRunner.httpie) else {
            XCTFail("httpie (\(ParityRunner.httpie)) is not installed: run scripts/setup (Debian's httpie package)")
            throw ParityError(description: "httpie missing")
        }
        return ParityRunner(server: server, tlsServer: tls, onet: try onetExecutable())
    }

    /// Runs `cases` with both tools; fails for each that differs without being a deliberate difference,
    /// and for each deliberate one that does not differ (the list must stay true).
    private func check(_ cases: [ParityCase], runner: ParityRunner) throws {
        var identical = 0
        for parityCase in cases {
            let (httpie, onet) = try runner.outcomes(parityCase)
            let reason = ParityCases.deliberate[parityCase.id]
            if httpie == onet {
                identical += 1
                XCTAssertNil(reason, "\(parityCase.id) is listed as a deliberate difference but is identical")
            } else if reason == nil {
                XCTFail("\(parityCase.id) differs:\n--- httpie \(httpie)\n--- onet \(onet)")
            }
        }
        XCTAssertGreaterThanOrEqual(Double(identical), 0.9 * Double(cases.count), "identical: \(identical) of \(cases.count)")
    }

    func testRequestItemsSendWhatHTTPieSends() throws {
        try check(ParityCases.items, runner: runner())
    }

    func testMethodsAndBodiesAreWhatHTTPieSends() throws {
        try check(ParityCases.bodies, runner: runner())
    }

    func testURLsAuthRedirectsStatusesAndOutputFlagsMatchHTTPie() throws {
        try check(ParityCases.exchanges, runner: runner())
    }

    func testDownloadsSessionsProxiesAndTLSMatchHTTPie() throws {
        let authority = try TestCertificateAuthority(commonName: "parity CA")
        let tls = try TestServer(tls: try authority.issue())
        defer { tls.shutdown() }
        let pem = Data(CertificateData.pem([authority.certificate]).utf8)
        try check(ParityCases.stateful + ParityCases.tls(writingAuthority: pem), runner: runner(tls: tls))
    }

    /// At least 80 invocations, at least 90 % of them identical, every deliberate difference a row of
    /// the table `onet request --help` shows.
    func testTheDeliberateDifferencesAreFewAndEachIsInTheHelpTable() throws {
        let all = ParityCases.items + ParityCases.bodies + ParityCases.exchanges + ParityCases.stateful
            + ParityCases.tls(writingAuthority: Data())
        XCTAssertGreaterThanOrEqual(all.count, 80)
        XCTAssertEqual(Set(all.map(\.id)).count, all.count, "case names are unique")
        XCTAssertLessThanOrEqual(Double(ParityCases.deliberate.count), 0.1 * Double(all.count))
        for id in ParityCases.deliberate.keys { XCTAssertTrue(all.contains { $0.id == id }, "\(id) is not a case") }
        let help = try runOnetCapturing(["request", "--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        let text = help.text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for (id, row) in ParityCases.deliberate {
            XCTAssertTrue(text.contains(row), "\(id): the help's table has no row '\(row)'")
        }
    }
}
