import Foundation
import OperationNetworkingTestServer
import XCTest

/// `onet serve --tls` and `--port`: HTTPS with certificates made for the run, whose PEM files it
/// prints, so pinning and a private CA can be tried offline; a chosen port, and a port in use refused
/// with one line.
final class OnetServeTLSTests: LibraryTestCase {
    /// A port nothing listens on now: the kernel's choice for a server started and stopped at once.
    private func freePort() throws -> Int {
        let probe = try TestServer()
        defer { probe.shutdown() }
        return probe.port
    }

    /// Starts `onet serve` with `arguments` and reads its standard output until it printed `lines`
    /// lines (or closed it).
    private func serve(_ arguments: [String], lines: Int) throws -> (Process, XCTestExpectation, Pipe, [String]) {
        let output = Pipe()
        let (process, exited) = try launchOnet(["serve", "--seconds", "60"] + arguments, output: output)
        var text = ""
        while text.filter({ $0 == "\n" }).count < lines {   // blocks until more arrives (or the pipe closes)
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return (process, exited, output, text.split(separator: "\n").map(String.init))
    }

    /// The path a line such as `CA certificate: /tmp/…/ca.pem (trust it: …)` names.
    private func path(in lines: [String], after label: String) throws -> String {
        let line = try XCTUnwrap(lines.first { $0.hasPrefix(label) }, "no \(label) line in \(lines)")
        return try XCTUnwrap(line.dropFirst(label.count).split(separator: " ").first.map(String.init), line)
    }

    func testTLSServesOnTheGivenPortToClientsThatTrustOrPinThePrintedCertificates() throws {
        let port = try freePort()
        let (process, exited, output, lines) = try serve(["--tls", "--port", String(port)], lines: 3)
        XCTAssertEqual(lines.first, "Serving on https://127.0.0.1:\(port)", "\(lines)")
        let authority = try path(in: lines, after: "CA certificate: ")
        let leaf = try path(in: lines, after: "Server certificate: ")
        for file in [authority, leaf] {
            let pem = try String(contentsOfFile: file, encoding: .utf8)
            XCTAssertTrue(pem.hasPrefix("-----BEGIN CERTIFICATE-----\n"), pem)
            XCTAssertFalse(pem.contains("PRIVATE KEY"), "only certificates are written")
        }
        let target = "https://127.0.0.1:\(port)/echo"

        let untrusted = try runOnetCapturing(["request", "-I", target, "q==untrusted"])
        XCTAssertEqual(untrusted.status, 1, "a CA made for the run is no system CA: \(untrusted)")
        XCTAssertTrue(untrusted.stderr.contains("certificate"), untrusted.stderr)
        let trusted = try runOnetCapturing(["request", "-I", "--cacert", authority, target, "q==trusted"])
        XCTAssertEqual(trusted.status, 0, trusted.description)
        XCTAssertTrue(trusted.text.contains("\"q\":\"trusted\""), trusted.text)
        let pinned = try runOnetCapturing(["request", "-I", "--pin-cert", leaf, target, "q==pinned"])
        XCTAssertEqual(pinned.status, 0, pinned.description)
        XCTAssertTrue(pinned.text.contains("\"q\":\"pinned\""), pinned.text)
        let keyPinned = try runOnetCapturing(["request", "-I", "--pin-key", leaf, target, "q==key"])
        XCTAssertEqual(keyPinned.status, 0, keyPinned.description)
        // Another CA's certificate (DER), pinned: refused even with verification off.
        let stranger = FileManager.default.temporaryDirectory.appendingPathComponent("stranger-\(UUID().uuidString).der")
        try TestCertificateAuthority(commonName: "Stranger").certificate.write(to: stranger)
        defer { try? FileManager.default.removeItem(at: stranger) }
        let wrongPin = try runOnetCapturing(["request", "-I", "--insecure", "--pin-cert", stranger.path, target])
        XCTAssertEqual(wrongPin.status, 1, wrongPin.description)

        process.terminate()
        wait(for: [exited], timeout: 10)
        XCTAssertEqual(process.terminationStatus, 0)
        let rest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertTrue(rest.contains("Served 3 request(s)."), "refused handshakes never reach the server: \(rest)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: authority), "the run's certificates are removed with it")
        XCTAssertFalse(FileManager.default.fileExists(atPath: leaf))
    }

    func testPlainServeListensOnTheGivenPort() throws {
        let port = try freePort()
        let (process, exited, _, lines) = try serve(["--port", String(port)], lines: 1)
        XCTAssertEqual(lines, ["Serving on http://127.0.0.1:\(port)"])
        let run = try runOnetCapturing(["request", "-I", "http://127.0.0.1:\(port)/echo", "q==port"])
        XCTAssertEqual(run.status, 0, run.description)
        XCTAssertTrue(run.text.contains("\"q\":\"port\""), run.text)
        process.terminate()
        wait(for: [exited], timeout: 10)
        XCTAssertEqual(process.terminationStatus, 0)
    }

    func testAPortInUseIsRefusedWithOneLine() throws {
        let busy = try TestServer()
        defer { busy.shutdown() }
        for arguments in [["--port", String(busy.port)], ["--tls", "--port", String(busy.port)]] {
            let run = try runOnetCapturing(["serve", "--seconds", "5"] + arguments)
            XCTAssertEqual(run.status, 1, run.description)
            XCTAssertTrue(run.stderr.hasPrefix("onet: error: cannot serve on 127.0.0.1 port \(busy.port): "), run.stderr)
            XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, run.stderr)
            XCTAssertEqual(run.text, "", "no URL printed for a server that did not start")
        }
        let invalid = try runOnetCapturing(["serve", "--port", "70000"])
        XCTAssertNotEqual(invalid.status, 0)
        XCTAssertTrue(invalid.stderr.contains("--port must be between 0 and 65535"), invalid.stderr)
    }
}
