import CTestEnvironment
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// Where the shared cache lives by default, and that this test process keeps it out of the user's
/// cache directory (CTestEnvironment sets XDG_CACHE_HOME before any test runs). The default is looked
/// at in a child process of its own, where no test installed `TestURLCache` first.
final class SharedCacheLocationTests: LibraryTestCase {
    func testTheSharedCacheIsOnDiskInTheProcessesOwnCacheDirectory() throws {
        try runChildHalf("SharedCacheLocationTests/testChildHalfChecksTheDefault",
                         environment: [TestURLCache.keepDefaultVariable: "1"])
    }

    /// The child half of `testTheSharedCacheIsOnDiskInTheProcessesOwnCacheDirectory`.
    func testChildHalfChecksTheDefault() throws {
        guard ProcessInfo.processInfo.environment[TestURLCache.keepDefaultVariable] != nil else {
            throw XCTSkip("the child process of testTheSharedCacheIsOnDiskInTheProcessesOwnCacheDirectory")
        }
        let home = try XCTUnwrap(cte_private_cache_home().map { String(cString: $0) })
        XCTAssertEqual(ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], home)
        XCTAssertTrue(home.hasPrefix(FileManager.default.temporaryDirectory.path), home)
        XCTAssertNotEqual(home, ProcessInfo.processInfo.environment["ONET_TESTS_USER_CACHE_HOME"])

        let shared = CacheStorage.defaultShared()
        XCTAssertTrue(shared is SQLiteURLCache, "\(type(of: shared))")
        XCTAssertTrue(CacheStorage.defaultShared() === shared, "installed once")
        // Apple's documented capacities for the shared cache.
        XCTAssertEqual(shared.memoryCapacity, 4 * 1024 * 1024)
        XCTAssertEqual(shared.diskCapacity, 20 * 1024 * 1024)
        // On disk in a folder named after the process, under the cache directory.
        let folder = URL(fileURLWithPath: home).appendingPathComponent("org.operationnetworking.URLCache")
            .appendingPathComponent(ProcessInfo.processInfo.processName)
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:9/location/\(UUID().uuidString)"))
        CacheStorage(shared).store(StoredResponses.named(url), for: URLRequest(url: url))
        (shared as? SQLiteURLCache)?.flush()
        defer { shared.removeCachedResponse(for: URLRequest(url: url)) }
        let reopened = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 20 << 20, directory: folder)
        XCTAssertEqual(reopened.cachedResponse(for: URLRequest(url: url))?.data, StoredResponses.named(url).body)
    }

    func testToolsTheTestsRunKeepTheUsersOtherCaches() throws {
        let home = try XCTUnwrap(cte_private_cache_home().map { String(cString: $0) })
        let userCaches = try XCTUnwrap(ProcessInfo.processInfo.environment["ONET_TESTS_USER_CACHE_HOME"])
        XCTAssertNotEqual(userCaches, home)
        // swift build's package cache and clang's module cache, where the tests' nested builds find them.
        for name in ["org.swift.swiftpm", "clang"] where FileManager.default.fileExists(atPath: "\(userCaches)/\(name)") {
            XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: "\(home)/\(name)"), "\(userCaches)/\(name)")
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: home) 
            where !["org.swift.foundation.URLCache", "org.operationnetworking.URLCache"].contains(name) {
            XCTAssertNoThrow(try FileManager.default.destinationOfSymbolicLink(atPath: "\(home)/\(name)"), name)
        }
        for name in ["org.swift.foundation.URLCache", "org.operationnetworking.URLCache"]
            where FileManager.default.fileExists(atPath: "\(home)/\(name)") {
            XCTAssertThrowsError(try FileManager.default.destinationOfSymbolicLink(atPath: "\(home)/\(name)"), name)
        }
    }
}
