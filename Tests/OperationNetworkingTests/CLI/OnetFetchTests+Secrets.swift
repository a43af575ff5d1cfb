import Foundation
import XCTest

/// `onet fetch`'s state file outlives the run: it is its owner's alone (0600 whatever the umask) and
/// holds no user name or password written in a URL, neither in its URLs nor in a paused download's
/// archive; the same command line, which gives the URL with its login again, still picks up its entries.
extension OnetFetchTests {
    /// The login written into the tests' URLs.
    private static let (loginUser, loginPassword) = ("fetch-login-user", "fetch-login-secret")

    /// A failed URL with `user:secret@` leaves a 0600 state file (onet run under umask 000, then 277)
    /// without the user or the password; its error line shows the password as `***`; the same command
    /// again reuses the entry rather than adding one.
    func testAFailedURLsLoginNeverReachesTheStateFileWhichIsTheOwnersAlone() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let url = try withLogin(server.url("/status/404"))
        // One umask lets everyone read what onet creates, the other takes bits from the owner too.
        for (attempt, umask) in [(1, "000"), (2, "277")] {
            let run = try runOnet(["fetch", "--to", target.path, url.absoluteString], umask: umask)
            XCTAssertEqual(run.status, 1, run.description)
            XCTAssertEqual(permissions(of: target), 0o777, "onet ran under umask 000 (the directory it made is 0777)")
            XCTAssertFalse(run.stderr.contains(Self.loginPassword), run.description)
            XCTAssertTrue(run.stderr.contains("\(Self.loginUser):***@"), run.description)
            let file = target.appendingPathComponent(".onet-fetch-state")
            XCTAssertEqual(permissions(of: file), 0o600, "run \(attempt): the state file is its owner's alone")
            try assertHoldsNoLogin(try Data(contentsOf: file), "the state file (run \(attempt))")
            let state = try loadState(target)
            XCTAssertEqual(state.files.map(\.url), [server.url("/status/404").absoluteString],
                           "run \(attempt): the URL without its login, matched again by the same command")
            XCTAssertEqual(state.files.map(\.status), ["failed"])
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: target.path), [".onet-fetch-state"],
                       "no temporary file is left beside it")
    }

    /// A paused download of a URL with a login: neither the state file nor the paused operation's archive
    /// in it holds the login; the same command continues it under its name with a Range request.
    func testAPausedDownloadsArchiveHoldsNoLoginAndTheSameCommandContinuesIt() throws {
        let target = try makeDirectory().appendingPathComponent("out")
        let url = try withLogin(server.url("/bytes/1000000?chunkSize=10000&chunkDelayMs=20"))
        let file = target.appendingPathComponent("1000000")
        try interruptFetch(of: url, into: target, file: file)
        let stateFile = target.appendingPathComponent(".onet-fetch-state")
        XCTAssertEqual(permissions(of: stateFile), 0o600)
        try assertHoldsNoLogin(try Data(contentsOf: stateFile), "the state file")
        let paused = try XCTUnwrap(loadState(target).files.first)
        XCTAssertEqual(paused.status, "paused")
        try assertHoldsNoLogin(try XCTUnwrap(paused.archive), "the paused operation's archive")
        let bytes = try XCTUnwrap(paused.bytes)

        let resumed = try runOnetCapturing(["fetch", "--to", target.path, url.absoluteString])
        XCTAssertEqual(resumed.status, 0, resumed.description)
        XCTAssertEqual(server.requests(path: "/bytes/1000000").last?.header("Range"), "bytes=\(bytes)-")
        XCTAssertEqual(try Data(contentsOf: file), deterministicBytes(1_000_000))
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent("1000000-1").path),
                       "the URL given with its login again matched the entry kept without it")
    }

    // MARK: - Helpers

    /// `url` with the test login written into its authority.
    private func withLogin(_ url: URL) throws -> URL {
        var components = try XCTUnwrap(URLComponents(url: url, resolvingAgainstBaseURL: true))
        components.user = Self.loginUser
        components.password = Self.loginPassword
        return try XCTUnwrap(components.url)
    }

    /// Fails if `data` holds the login's user or password (as UTF-8 or UTF-16).
    private func assertHoldsNoLogin(_ data: Data, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        for secret in [Self.loginUser, Self.loginPassword] {
            XCTAssertNil(data.range(of: Data(secret.utf8)), "\(secret) in \(what)", file: file, line: line)
            for encoding in [String.Encoding.utf16BigEndian, .utf16LittleEndian] {
                XCTAssertNil(data.range(of: try XCTUnwrap(secret.data(using: encoding))), "\(secret) in \(what)", file: file, line: line)
            }
        }
    }

    /// The permission bits of the file at `url`, or `nil` when there is none.
    private func permissions(of url: URL) -> Int? {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? NSNumber).map { $0.intValue & 0o777 }
    }

    /// Runs `onet` under `umask`, set by a shell that then execs it (this process's umask, which other
    /// tests share, is left alone): under `000` a file onet creates without choosing its mode is 0666.
    private func runOnet(_ arguments: [String], umask: String) throws -> OnetRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "umask \(umask) && exec \"$0\" \"$@\"", try onetExecutable().path] + arguments
        process.environment = onetEnvironment()
        let (output, errors) = (Pipe(), Pipe())
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        let exited = expectation(description: "onet exits")
        process.terminationHandler = { _ in exited.fulfill() }
        try process.run()
        let errorText = PipeReader(errors.fileHandleForReading)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        wait(for: [exited], timeout: 60)
        return OnetRun(status: process.terminationStatus, stdout: data, stderr: errorText.wait())
    }
}
