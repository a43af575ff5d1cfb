import Foundation
import XCTest

/// `onet fetch` in a real pseudo-terminal: a detached tmux session (its own server socket, 120×40) runs
/// an interactive shell; the test types the command, reads the screen with `capture-pane -p`, sends
/// Ctrl-C with `send-keys C-c`, then runs the same command again and checks the resumed files and the
/// Range requests on the wire.
extension OnetFetchTests {
    /// Bars on a real terminal, Ctrl-C → exit 130 and a state file, the same command again → Range requests and byte-exact files.
    func testProgressBarsCtrlCPausesAndTheSameCommandResumesByteExact() throws {
        guard let tmuxPath = Self.executable("tmux") else { throw XCTSkip("tmux is not installed (scripts/setup installs it)") }
        let base = try makeDirectory()
        let target = base.appendingPathComponent("out")
        // Two slow files (throttled: 10 kB every 20 ms, several seconds each) still running when Ctrl-C
        // comes, one small file that is done by then.
        let sizes = [3_000_000, 2_000_000, 40_000]
        let urls = sizes.map { size in
            size > 100_000 ? server.url("/bytes/\(size)?chunkSize=10000&chunkDelayMs=20") : server.url("/bytes/\(size)")
        }
        let list = base.appendingPathComponent("urls.txt")
        try urls.map(\.absoluteString).joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let arguments = ["fetch", "--from", list.path, "--to", target.path, "--concurrency", "3"]
        let onet = try onetExecutable().path

        let tmux = TmuxSession(socket: "onet-fetch-\(getpid())-\(UUID().uuidString.prefix(8))", path: tmuxPath)
        tmuxSession = tmux
        // An interactive shell whose terminal size is settled before onet starts; the command is typed
        // into it, so Ctrl-C reaches onet as it would from a user, and the exit status is echoed after it.
        let started = try tmux.run(["new-session", "-d", "-s", "fetch", "-x", "120", "-y", "40", "env PS1='$ ' sh"])
        XCTAssertEqual(started.status, 0, started.output)
        XCTAssertTrue(eventually(timeout: 10) { ((try? tmux.capture()) ?? "").hasPrefix("$") }, "no shell prompt")
        let command = ([onet] + arguments).map { "'\($0)'" }.joined(separator: " ") + "; echo EXIT=$?"
        XCTAssertEqual(try tmux.run(["send-keys", "-t", "fetch", "-l", command]).status, 0)
        XCTAssertEqual(try tmux.run(["send-keys", "-t", "fetch", "Enter"]).status, 0)

        // Progress bars: a bar glyph and a percentage on each slow file's line, and the total line.
        let barsShown = eventually(timeout: 30) {
            let screen = (try? tmux.capture()) ?? ""
            return ["3000000", "2000000"].allSatisfy { name in
                screen.split(separator: "\n").contains { $0.hasPrefix(name) && $0.contains("█") && $0.contains("%") }
            } && screen.contains("saved \(target.path)/40000") && screen.range(of: "ETA [0-9]", options: .regularExpression) != nil
        }
        let screen = try tmux.capture()
        XCTAssertTrue(barsShown, "no progress bars on the screen:\n\(screen)")
        XCTAssertTrue(screen.range(of: "Total  1/3 files  [0-9.]+ [KM]B / 4.8 MB  [0-9.]+ [KM]?B/s  ETA [0-9]",
                                   options: .regularExpression) != nil, "the total line: bytes, rate, ETA\n\(screen)")
        print("screen before Ctrl-C:\n\(screen.trimmingCharacters(in: .whitespacesAndNewlines))")

        XCTAssertEqual(try tmux.run(["send-keys", "-t", "fetch", "C-c"]).status, 0)
        XCTAssertTrue(eventually(timeout: 30) { ((try? tmux.capture()) ?? "").range(of: "EXIT=[0-9]", options: .regularExpression) != nil },
                      "onet did not exit after Ctrl-C:\n\((try? tmux.capture()) ?? "")")
        let after = try tmux.capture()
        print("screen after Ctrl-C:\n\(after.trimmingCharacters(in: .whitespacesAndNewlines))")
        XCTAssertTrue(after.contains("EXIT=130"), "Ctrl-C exits with status 130:\n\(after)")
        XCTAssertTrue(after.contains("interrupted: 2 paused"), after)
        XCTAssertTrue(after.contains("saved \(target.path)/40000"), "redrawing never erases the lines above the bars:\n\(after)")
        XCTAssertFalse(after.contains("█"), "the bars are cleared on exit:\n\(after)")

        // The state: the small file done, the slow ones paused part-way with their archives.
        let state = try JSONDecoder().decode(OnetFetchTests.StateFile.self,
                                             from: Data(contentsOf: target.appendingPathComponent(".onet-fetch-state")))
        XCTAssertEqual(state.version, 1)
        XCTAssertEqual(state.files.map(\.name), ["3000000", "2000000", "40000"])
        XCTAssertEqual(state.files.map(\.status), ["paused", "paused", "done"])
        var offsets: [String: Int64] = [:]
        for (entry, size) in zip(state.files, sizes) where entry.status == "paused" {
            let bytes = try XCTUnwrap(entry.bytes)
            XCTAssertTrue(bytes > 0 && bytes < Int64(size), "\(entry.name) paused part-way: \(bytes)")
            XCTAssertNotNil(entry.archive, entry.name)
            XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent(entry.name)), deterministicBytes(Int(bytes)),
                           "the part on disk is the resource's prefix")
            offsets[entry.name] = bytes
        }

        // The same command again (no terminal this time) finishes the paused files with Range requests.
        let firstRun = server.requests.count
        let rerun = try runOnetCapturing(arguments)
        XCTAssertEqual(rerun.status, 0, rerun.description)
        for (name, size) in zip(["3000000", "2000000", "40000"], sizes) {
            XCTAssertEqual(try Data(contentsOf: target.appendingPathComponent(name)), deterministicBytes(size),
                           "\(name) is byte-exact after the resume")
        }
        let resumed = server.requests.dropFirst(firstRun)
        XCTAssertEqual(resumed.count, 2, "only the paused files are requested again: \(resumed.map(\.uri))")
        for (name, offset) in offsets {
            let request = try XCTUnwrap(resumed.first { $0.path == "/bytes/\(name)" }, "\(name) was not resumed")
            XCTAssertEqual(request.header("Range"), "bytes=\(offset)-", name)
            XCTAssertNotNil(request.header("If-Range"), name)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent(".onet-fetch-state").path),
                       "the state file is removed once everything finished")
    }

    // MARK: - Helpers

    /// The path of `name` on `PATH`, or `nil`.
    static func executable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A tmux server of its own (`tmux -L <socket>`) with one session, "fetch".
struct TmuxSession: Sendable {
    /// The server's socket name.
    let socket: String
    /// The tmux executable.
    let path: String

    /// The visible screen of the session's pane.
    func capture() throws -> String {
        try run(["capture-pane", "-p", "-t", "fetch"]).output
    }

    /// Runs tmux on this socket with a UTF-8 locale (so the bar glyphs are drawn as such); its status
    /// and combined output.
    ///
    /// Spawned directly, not with `Process`: corelibs' `Process` learns of the exit through a socket
    /// the child inherits, and the tmux server that `new-session` forks keeps that socket open, so
    /// `waitUntilExit()` (and reading a pipe to its end) would never return.
    @discardableResult
    func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        var environment = onetEnvironment()
        environment["LANG"] = "C.UTF-8"
        environment["LC_ALL"] = "C.UTF-8"
        environment["TERM"] = "xterm-256color"
        environment.removeValue(forKey: "TMUX")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: file) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, file.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([path, "-u", "-L", socket] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exitStatus, String(decoding: (try? Data(contentsOf: file)) ?? Data(), as: UTF8.self))
    }
}
