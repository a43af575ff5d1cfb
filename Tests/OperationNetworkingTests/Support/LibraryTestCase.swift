import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// The base of every test class: before its first test, the process's `URLCache.shared` becomes a
/// cache without capacity in a temporary directory of this process (see `TestURLCache`).
class LibraryTestCase: XCTestCase {
    override class func setUp() {
        super.setUp()
        // The child process of SharedCacheLocationTests looks at the library's own default instead.
        guard ProcessInfo.processInfo.environment[TestURLCache.keepDefaultVariable] == nil else { return }
        TestURLCache.install()
    }
}

/// The test process's shared URL cache. Operations read and store `URLCache.shared` by default, and
/// every test server listens on a port the kernel may hand out again later in the run: with a real
/// shared cache one test's responses would answer another's requests, and the suite would write into
/// the user's cache directory. This one stores nothing, in a directory removed when the process exits;
/// the cache's own tests give their operations a cache of their own (`CacheTestCase`).
enum TestURLCache {
    /// Where the shared cache of this process lives.
    static var directory: URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("onet-tests-urlcache-\(getpid())")
    }

    /// Set in the environment of a child process that must see the library's default shared cache.
    static let keepDefaultVariable = "ONET_TESTS_KEEP_DEFAULT_SHARED_CACHE"

    private static let installed: Bool = {
        // The library's own class: the library replaces a plain corelibs `URLCache.shared` with its
        // default store at first use, and leaves an instance of a subclass alone.
        URLCache.shared = SQLiteURLCache(memoryCapacity: 0, diskCapacity: 0, directory: directory)
        atexit { try? FileManager.default.removeItem(at: TestURLCache.directory) }
        return true
    }()

    /// Installs the shared cache once per process.
    static func install() {
        _ = installed
    }
}
