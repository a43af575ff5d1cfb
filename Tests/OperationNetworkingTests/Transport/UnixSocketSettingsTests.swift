import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// `unixSocketPath` as a setting: copied by the manager and `copy()`, archived with the operation and
/// the manager (and refused from a tampered archive), and shown by `curlDescription` as
/// `--unix-socket`, which curl run by `/bin/sh` follows to the same server.
final class UnixSocketSettingsTests: LibraryTestCase {
    private var folder: URL!
    private var server: TestServer!
    private var socketPath: String { server.unixSocketPath ?? "" }

    override func setUpWithError() throws {
        try super.setUpWithError()
        folder = try makeSocketFolder()
        // A quote in the path: the command must quote it for the shell.
        server = try makeSocketServer("it's here.sock", in: folder)
    }

    private func request(_ url: String) throws -> URLRequest {
        var request = URLRequest(url: try XCTUnwrap(URL(string: url)))
        request.timeoutInterval = 10
        return request
    }

    // MARK: - Copies and archives

    func testTheManagerAndCopyCarryTheSocket() throws {
        let manager = HTTPRequestOperationManager(baseURL: nil)
        XCTAssertNil(manager.unixSocketPath)
        manager.unixSocketPath = socketPath
        let operation = manager.httpRequestOperation(with: try request("http://docker.test/echo"), success: nil, failure: nil)
        XCTAssertEqual(operation.unixSocketPath, socketPath)
        let copy = try XCTUnwrap(operation.copy() as? HTTPRequestOperation)
        XCTAssertEqual(copy.unixSocketPath, socketPath)
        XCTAssertEqual((manager.copy() as? HTTPRequestOperationManager)?.unixSocketPath, socketPath)
        XCTAssertNil(run(copy).error)
        XCTAssertEqual(server.requests(path: "/echo").count, 1)
    }

    func testARestoredManagerSendsOverItsArchivedSocket() throws {
        let manager = HTTPRequestOperationManager(baseURL: URL(string: "http://docker.test/v1/"))
        manager.unixSocketPath = socketPath
        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: try SafeArchive.archive(manager))
        XCTAssertEqual(restored.unixSocketPath, socketPath)
        let operation = restored.httpRequestOperation(with: try request("http://docker.test/echo?restored=1"), success: nil, failure: nil)
        XCTAssertNil(run(operation).error)
        XCTAssertEqual(server.requests(path: "/echo").first?.query["restored"], "1")
        let plain = try SafeArchive.unarchive(HTTPRequestOperationManager.self,
                                              from: try SafeArchive.archive(HTTPRequestOperationManager(baseURL: nil)))
        XCTAssertNil(plain.unixSocketPath)
    }

    func testARestoredOperationSendsOverItsArchivedSocket() throws {
        let operation = HTTPRequestOperation(request: try request("http://docker.test/echo?op=1"))
        operation.unixSocketPath = socketPath
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: try SafeArchive.archive(operation))
        XCTAssertEqual(restored.unixSocketPath, socketPath)
        XCTAssertNil(run(restored).error)
        XCTAssertEqual(server.requests(path: "/echo").first?.query["op"], "1")
    }

    /// `archive` with the string `value` in its objects replaced by `replacement`.
    private func replacing(_ value: String, with replacement: Any, in archive: Data) throws -> Data {
        var plist = try XCTUnwrap(try PropertyListSerialization.propertyList(from: archive, format: nil) as? [String: Any])
        var objects = try XCTUnwrap(plist["$objects"] as? [Any])
        let index = try XCTUnwrap(objects.firstIndex { ($0 as? String) == value }, "the archive holds \(value)")
        objects[index] = replacement
        plist["$objects"] = objects
        return try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
    }

    func testASocketPathOfAnotherTypeOrWithANULByteFailsTheDecoding() throws {
        let manager = HTTPRequestOperationManager(baseURL: nil)
        manager.unixSocketPath = socketPath
        let operation = HTTPRequestOperation(request: try request("http://docker.test/echo"))
        operation.unixSocketPath = socketPath
        for replacement in [42, "/tmp/a\u{0}b"] as [Any] {
            let managerArchive = try replacing(socketPath, with: replacement, in: try SafeArchive.archive(manager))
            XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: managerArchive)) {
                XCTAssertEqual(($0 as NSError).domain, ArchiveErrorDomain)
                XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.invalidValue.rawValue, "\($0)")
                XCTAssertTrue("\($0)".contains("unixSocketPath"), "\($0)")
            }
            let operationArchive = try replacing(socketPath, with: replacement, in: try SafeArchive.archive(operation))
            XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperation.self, from: operationArchive)) {
                XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.invalidValue.rawValue, "\($0)")
            }
        }
    }

    // MARK: - curlDescription

    /// Runs `command` with `/bin/sh -c`, its output discarded; the exit status.
    private func runShell(_ command: String) throws -> Int32 {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else {
            throw XCTSkip("the curl command line tool is not installed (scripts/setup installs it)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let exited = expectation(description: "sh exits")
        process.terminationHandler = { _ in exited.fulfill() }
        try process.run()
        wait(for: [exited], timeout: 30)
        return process.terminationStatus
    }

    func testTheCurlDescriptionReachesTheSocketsServer() throws {
        let operation = HTTPRequestOperation(request: try request("http://docker.test/echo?from=curl"))
        operation.unixSocketPath = socketPath
        operation.proxy = .proxy(try XCTUnwrap(URL(string: "http://127.0.0.1:9")))
        let command = operation.curlDescription
        XCTAssertTrue(command.contains("--unix-socket '\(socketPath.replacingOccurrences(of: "'", with: "'\\''"))'"), command)
        XCTAssertFalse(command.contains("--proxy"), command)
        XCTAssertEqual(try runShell(command), 0, command)
        let wire = try XCTUnwrap(server.requests(path: "/echo").first, command)
        XCTAssertEqual(wire.header("Host"), "docker.test")
        XCTAssertEqual(wire.query["from"], "curl")
    }

    func testTheCurlDescriptionOfAnHTTPUnixURLSendsItsLocalhostURL() throws {
        let operation = HTTPRequestOperation(request: try request("http+unix://\(unixURLHost(socketPath))/echo?from=unix"))
        let command = operation.curlDescription
        XCTAssertTrue(command.hasSuffix("'http://localhost/echo?from=unix'"), command)
        XCTAssertEqual(try runShell(command), 0, command)
        let wire = try XCTUnwrap(server.requests(path: "/echo").first, command)
        XCTAssertEqual(wire.header("Host"), "localhost")
    }
}
