import Foundation
import OperationNetworkingTestServer
import XCTest

extension XCTestCase {
    /// A folder of its own for the test's Unix domain sockets, short enough for a socket address
    /// (108 bytes), removed when the test ends.
    func makeSocketFolder() throws -> URL {
        let folder = URL(fileURLWithPath: "/tmp/onet-us-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }

    /// A test server listening on the socket `name` in `folder`, shut down when the test ends.
    func makeSocketServer(_ name: String = "s.sock", in folder: URL) throws -> TestServer {
        let server = try TestServer(unixSocketPath: folder.appendingPathComponent(name).path)
        addTeardownBlock { server.shutdown() }
        return server
    }

    /// `path` percent-encoded whole, as the host of an `http+unix` URL.
    func unixURLHost(_ path: String) -> String {
        path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? path
    }
}
