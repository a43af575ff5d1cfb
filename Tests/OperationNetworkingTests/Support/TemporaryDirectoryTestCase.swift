import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A server test with a fresh temporary directory of its own, removed after each test.
class TemporaryDirectoryTestCase: ServerTestCase {
    private(set) var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }
}
