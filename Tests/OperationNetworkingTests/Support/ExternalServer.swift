import Foundation
import XCTest

/// A real server from Debian (nginx, squid, dante) started for one test on a free loopback port, in a
/// directory of its own, and stopped (its process and everything it wrote) when the test ends.
/// Skips the test when the program is not installed (`scripts/setup` installs them).
final class ExternalServer: @unchecked Sendable {   // immutable after init but `cleanup`; `process` is thread-safe
    /// The loopback port it listens on.
    let port: Int
    /// Its working directory (configuration, logs, certificates).
    let directory: URL
    private let process: Process
    /// What `stop()` sends the process when nobody reads what it would write on its way out.
    private let stopSignal: Int32
    /// Undoes what the configuration set up outside `directory`; taken (and run) by the first `stop`.
    private var cleanup: (@Sendable () -> Void)?   // guarded by cleanupLock
    private let cleanupLock = NSLock()

    /// Writes `configuration(port, directory)` to `directory/<name>.conf`, runs `executable` with
    /// `arguments(configFile)` and waits (bounded) until the port accepts connections. `cleanup` runs
    /// when the server stops (or fails to start); `stopSignal` ends it then (SIGKILL: at once).
    init(executable: String, name: String, arguments: (String) -> [String], stopSignal: Int32 = SIGKILL,
         cleanup: (@Sendable () -> Void)? = nil, configuration: (Int, URL) throws -> String) throws {
        self.cleanup = cleanup
        self.stopSignal = stopSignal
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            cleanup?()
            throw XCTSkip("\(executable) is not installed (scripts/setup installs it)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try ExternalServer.freePort()
        let file = directory.appendingPathComponent("\(name).conf")
        try configuration(port, directory).write(to: file, atomically: true, encoding: .utf8)
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments(file.path)
        process.currentDirectoryURL = directory
        let log = directory.appendingPathComponent("\(name).stdio")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let deadline = Date().addingTimeInterval(15)
        while !ExternalServer.accepts(port: port) {
            guard process.isRunning, Date() < deadline else {
                stop()
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                throw NSError(domain: "ExternalServer", code: 1,
                              userInfo: [NSLocalizedDescriptionKey: "\(name) did not start on port \(port): \(output)"])
            }
            usleep(20_000)   // polling a port that is about to open; bounded by the deadline above
        }
    }

    /// Stops the process, runs the cleanup, and (unless `keepingFiles`) removes its directory.
    /// Without `keepingFiles` nobody reads what the server would write on its way out, so it is sent
    /// `stopSignal`, by default killed at once (squid spends two seconds on an orderly shut-down);
    /// with it, it is asked to end and given time to write its logs.
    func stop(keepingFiles: Bool = false) {
        if process.isRunning && !keepingFiles {
            kill(process.processIdentifier, stopSignal)
            process.waitUntilExit()
        }
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        let cleanup = cleanupLock.withLock { () -> (@Sendable () -> Void)? in
            defer { self.cleanup = nil }
            return self.cleanup
        }
        cleanup?()
        if !keepingFiles { try? FileManager.default.removeItem(at: directory) }
    }

    /// A port nothing listens on now (the kernel's pick for an ephemeral bind).
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { base -> Bool in
                bind(descriptor, base, length) == 0 && getsockname(descriptor, base, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

extension ExternalServer {
    /// nginx serving HTTP/2 over TLS (and HTTP/1.1 by ALPN) with `certificatePEM`/`keyPEM`, at most
    /// `streams` concurrent streams per connection; `/small` is 1 KiB, and the access log
    /// (`access.log`) records each request's connection serial number.
    /// With `large`, `/large` serves those bytes at 4 MB/s (slow enough to pause mid-way), honouring Range.
    /// nginx closes a connection idle for `keepaliveSeconds`, and ends one (HTTP/2: GOAWAY) after
    /// `keepaliveRequests` requests.
    static func nginxHTTP2(certificatePEM: String, keyPEM: String, streams: Int = 128, large: Data? = nil,
                           keepaliveSeconds: Int = 75, keepaliveRequests: Int = 100_000) throws -> ExternalServer {
        try ExternalServer(executable: "/usr/sbin/nginx", name: "nginx", arguments: { ["-p", ".", "-c", $0] }) { port, directory in
            try certificatePEM.write(to: directory.appendingPathComponent("cert.pem"), atomically: true, encoding: .utf8)
            try keyPEM.write(to: directory.appendingPathComponent("key.pem"), atomically: true, encoding: .utf8)
            try Data(repeating: 0x61, count: 1024).write(to: directory.appendingPathComponent("small"))
            if let large { try large.write(to: directory.appendingPathComponent("large")) }
            let path = directory.path
            return nginxPreamble(path: path, connections: 4096) + """
                log_format conn '$connection $request_uri $server_protocol $status "$http_range" "$http_if_range"';
                access_log \(path)/access.log conn;
                keepalive_requests \(keepaliveRequests);
                keepalive_timeout \(keepaliveSeconds)s;
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(path)/cert.pem;
                    ssl_certificate_key \(path)/key.pem;
                    http2_max_concurrent_streams \(streams);
                    root \(path);
                    location = /small { default_type application/octet-stream; }
                    location = /large { default_type application/octet-stream; limit_rate 4m; }
                }
            }
            """
        }
    }

    /// Lines of `access.log` so far (nginx writes each line when the request ends).
    var accessLog: [Substring] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n")
    }

    /// Connections nginx served requests for `path` on (its access log names each request's connection).
    func connections(serving path: String) -> Set<Substring> {
        Set(accessLog.filter { $0.contains(path) }.compactMap { $0.split(separator: " ").first })
    }
}

extension ExternalServer {
    /// squid as a forward proxy on loopback (no cache; CONNECT to any port). With `user`/`password`,
    /// every request needs Basic proxy authentication (realm "onet-test").
    static func squid(user: String? = nil, password: String? = nil) throws -> ExternalServer {
        try ExternalServer(executable: "/usr/sbin/squid", name: "squid", arguments: { ["-N", "-f", $0] }) { port, directory in
            let path = directory.path
            // squid drops to its own user: it must be able to write its logs and read its files here.
            chmod(path, 0o777)
            var auth = ""
            if let user, let password {
                let hash = try ExternalServer.apr1(password)
                try "\(user):\(hash)\n".write(to: directory.appendingPathComponent("passwd"), atomically: true, encoding: .utf8)
                chmod(directory.appendingPathComponent("passwd").path, 0o644)
                auth = """
                auth_param basic program /usr/lib/squid/basic_ncsa_auth \(path)/passwd
                auth_param basic realm onet-test
                acl authenticated proxy_auth REQUIRED
                http_access allow authenticated
                http_access deny all
                """
            } else {
                auth = "http_access allow all"
            }
            return """
            http_port 127.0.0.1:\(port)
            \(auth)
            cache deny all
            cache_mem 8 MB
            access_log \(path)/access.log
            cache_log \(path)/cache.log
            pid_filename \(path)/squid.pid
            coredump_dir \(path)
            shutdown_lifetime 0 seconds
            dns_v4_first on
            """
        }
    }

    /// An Apache MD5 ("$apr1$") password hash, which squid's basic_ncsa_auth reads.
    static func apr1(_ password: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["passwd", "-apr1", password]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The squid access log's lines so far.
    var squidLog: [Substring] { accessLog }
}

extension ExternalServer {
    /// A system user the SOCKS5 tests' dante logs in: dante's `username` method checks the system's
    /// password database, and has no file of its own. Made for one server, removed when it stops.
    struct SOCKSUser: Sendable {
        let name: String
        let password: String
    }

    /// dante (`danted`) as a SOCKS5 proxy on loopback, run in the foreground with the configuration in
    /// its own directory (never the system service). With `user`, it takes only that user's login
    /// (RFC 1929 user/password, `socksmethod: username`): the user is created with `useradd` (no home,
    /// no shell) and its password set with `chpasswd` — which needs root, as the tests run here; the
    /// test is skipped otherwise — and removed with `userdel` when the server stops. Without, no login.
    /// `danted.log` records each client connection (`tcp/accept`) and each relayed one (`tcp/connect`).
    static func dante(user: SOCKSUser? = nil) throws -> ExternalServer {
        let executable = "/usr/sbin/danted"
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw XCTSkip("\(executable) is not installed (scripts/setup installs it)")
        }
        if let user { try createSystemUser(user) }
        var cleanup: (@Sendable () -> Void)?
        if let name = user?.name {
            cleanup = { _ = try? ExternalServer.runTool("/usr/sbin/userdel", [name]) }
        }
        do {
            return try startDante(executable, socksMethod: user == nil ? "none" : "username", cleanup: cleanup)
        } catch {
            cleanup?()   // a second userdel after stop's own fails harmlessly
            throw error
        }
    }

    /// danted closes every descriptor it inherited, among them the one by which Foundation's `Process`
    /// learns that a child ended: Foundation would then wait for danted on the thread that reaps every
    /// child of the test process, and no other `Process` of the test would ever be seen to end. A
    /// shell holds that descriptor instead, runs danted, and passes it SIGTERM, which `stop()` sends
    /// (a SIGKILL would end the shell alone and leave danted and its children running).
    private static func startDante(_ executable: String, socksMethod: String,
                                   cleanup: (@Sendable () -> Void)?) throws -> ExternalServer {
        let script = "\(executable) -f \"$1\" -p danted.pid & child=$!; "
            + "trap 'kill -TERM $child; wait $child; exit 0' TERM; wait $child"
        return try ExternalServer(executable: "/bin/sh", name: "danted", arguments: { ["-c", script, "sh", $0] },
                                  stopSignal: SIGTERM, cleanup: cleanup) { port, directory in
            """
            logoutput: \(directory.path)/danted.log
            internal: 127.0.0.1 port = \(port)
            external: 127.0.0.1
            clientmethod: none
            socksmethod: \(socksMethod)
            user.privileged: root
            user.unprivileged: nobody
            client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 log: connect error }
            socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 log: connect error }
            """
        }
    }

    /// A fresh system user for one dante server: `onet-socks-` and six random letters.
    static func socksUser(password: String) -> SOCKSUser {
        let letters = "abcdefghijklmnopqrstuvwxyz"
        let suffix = String((0..<6).compactMap { _ in letters.randomElement() })
        return SOCKSUser(name: "onet-socks-\(suffix)", password: password)
    }

    private static func createSystemUser(_ user: SOCKSUser) throws {
        guard getuid() == 0 else {
            throw XCTSkip("the SOCKS5 login tests create a system user for dante, which needs root")
        }
        guard try runTool("/usr/sbin/useradd", ["--system", "--no-create-home", "--no-user-group", "--gid", "nogroup",
                                                "--shell", "/usr/sbin/nologin", user.name]) == 0 else {
            throw NSError(domain: "ExternalServer", code: 2, userInfo: [NSLocalizedDescriptionKey: "useradd \(user.name) failed"])
        }
        guard try runTool("/usr/sbin/chpasswd", [], input: "\(user.name):\(user.password)\n") == 0 else {
            _ = try? runTool("/usr/sbin/userdel", [user.name])
            throw NSError(domain: "ExternalServer", code: 3, userInfo: [NSLocalizedDescriptionKey: "chpasswd failed"])
        }
    }

    /// Runs `tool` with `arguments` (and `input` on its standard input); its exit status.
    @discardableResult
    private static func runTool(_ tool: String, _ arguments: [String], input: String? = nil) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let pipe = Pipe()
        if input != nil { process.standardInput = pipe }
        try process.run()
        if let input {
            try pipe.fileHandleForWriting.write(contentsOf: Data(input.utf8))
            try pipe.fileHandleForWriting.close()
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The lines of dante's log so far.
    var danteLog: [Substring] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("danted.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n")
    }
}

extension ExternalServer {
    /// The part every test nginx's configuration shares, up to the open `http {` block: one process in
    /// the foreground, its pid, error log and temporary folders in `path`.
    static func nginxPreamble(path: String, connections: Int) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(path)/nginx.pid;
        error_log \(path)/error.log warn;
        events { worker_connections \(connections); }
        http {
            client_body_temp_path \(path)/body;
            proxy_temp_path \(path)/proxy;
            fastcgi_temp_path \(path)/fastcgi;
            uwsgi_temp_path \(path)/uwsgi;
            scgi_temp_path \(path)/scgi;

        """
    }
}
