import Foundation
@testable import OperationNetworking
import XCTest

/// Real network changes, made safely inside a network namespace the test creates: `onet reachability`
/// runs in the namespace while the test adds and removes links, addresses and default routes.
/// The host's own interfaces and routes are never touched. Skipped without root or `ip`.
final class NamespaceReachabilityTests: LibraryTestCase {
    private var namespace = ""
    private var ipTool = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard getuid() == 0 else { throw XCTSkip("namespace tests need root") }
        guard let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first(where: FileManager.default.isExecutableFile) else {
            throw XCTSkip("namespace tests need iproute2's ip")
        }
        ipTool = ip
        namespace = "onet-test-\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
        guard (try? command(["netns", "add", namespace])) == 0 else {
            throw XCTSkip("cannot create a network namespace here")
        }
    }

    override func tearDown() {
        if !namespace.isEmpty { _ = try? command(["netns", "del", namespace]) }
        super.tearDown()
    }

    @discardableResult
    private func command(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipTool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// `ip -n <namespace> …`, which must succeed.
    private func inNamespace(_ arguments: String) throws {
        XCTAssertEqual(try command(["-n", namespace] + arguments.split(separator: " ").map(String.init)), 0, arguments)
    }

    /// Starts `onet reachability` inside the namespace; its status lines land in the recorder.
    private func watch(_ extra: [String] = []) throws -> (Process, Recorder<String>) {
        let onet = try onetExecutable()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ipTool)
        process.arguments = ["netns", "exec", namespace, onet.path, "reachability", "--seconds", "30"] + extra
        let output = Pipe()
        process.standardOutput = output
        let lines = Recorder<String>()
        let buffer = LineBuffer()
        output.fileHandleForReading.readabilityHandler = { handle in
            for line in buffer.add(handle.availableData) { lines.append(line) }
        }
        try process.run()
        return (process, lines)
    }

    private func expect(_ lines: Recorder<String>, count: Int, last: String, file: StaticString = #filePath, line: UInt = #line) {
        _ = eventually { lines.count >= count && lines.all.last == last }
        XCTAssertEqual(lines.all.last, last, "statuses seen: \(lines.all)", file: file, line: line)
        XCTAssertEqual(lines.count, count, "one line per change: \(lines.all)", file: file, line: line)
    }

    func testDefaultRouteComesAndGoes() throws {
        let (process, lines) = try watch()
        defer { process.terminate() }
        expect(lines, count: 1, last: "status=notReachable")
        try inNamespace("link add v0 type veth peer name v1")
        try inNamespace("link set v1 up")
        try inNamespace("link set v0 up")
        try inNamespace("addr add 10.77.0.2/24 dev v0")
        try inNamespace("route add default via 10.77.0.1 dev v0")
        expect(lines, count: 2, last: "status=reachableViaWiFi kind=wired")
        try inNamespace("route del default")
        expect(lines, count: 3, last: "status=notReachable")
        try inNamespace("route add default via 10.77.0.1 dev v0")
        expect(lines, count: 4, last: "status=reachableViaWiFi kind=wired")
        try inNamespace("link set v0 down")
        expect(lines, count: 5, last: "status=notReachable")
    }

    func testCellularInterfaceIsWWAN() throws {
        let (process, lines) = try watch()
        defer { process.terminate() }
        expect(lines, count: 1, last: "status=notReachable")
        try inNamespace("link add wwan0 type veth peer name wwan1")
        try inNamespace("link set wwan1 up")
        try inNamespace("link set wwan0 up")
        try inNamespace("addr add 10.78.0.2/24 dev wwan0")
        try inNamespace("route add default via 10.78.0.1 dev wwan0")
        expect(lines, count: 2, last: "status=reachableViaWWAN kind=cellular")
    }

    func testAnAddressIsReachableThroughItsRoute() throws {
        let (process, lines) = try watch(["--address", "10.79.0.9"])
        defer { process.terminate() }
        expect(lines, count: 1, last: "status=notReachable")
        try inNamespace("link add v0 type veth peer name v1")
        try inNamespace("link set v1 up")
        try inNamespace("link set v0 up")
        try inNamespace("addr add 10.79.0.2/24 dev v0")
        expect(lines, count: 2, last: "status=reachableViaWiFi kind=wired")
        try inNamespace("addr del 10.79.0.2/24 dev v0")
        expect(lines, count: 3, last: "status=notReachable")
    }
}

/// Splits a byte stream into lines; guarded by `lock`, hence `@unchecked Sendable`.
final class LineBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var pending = Data()   // guarded by lock

    func add(_ data: Data) -> [String] {
        lock.withLock {
            pending.append(data)
            var lines: [String] = []
            while let newline = pending.firstIndex(of: 0x0A) {
                lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                pending.removeSubrange(pending.startIndex...newline)
            }
            return lines
        }
    }
}
