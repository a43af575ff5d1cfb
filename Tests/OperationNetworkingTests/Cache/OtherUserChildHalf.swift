import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// The uid (and gid) of `nobody`, as which the cache-file tests run a child half to meet files of
/// another user.
let otherUserID: uid_t = 65534

extension XCTestCase {
    /// `runChildHalf`, with the child run as uid and gid 65534 and no supplementary groups (util-linux
    /// `setpriv`). Needs root, as CI runs the tests; skipped otherwise, saying so. The test bundle and
    /// its folders are readable and searchable by others (the checkout is 0755), so the child runs the
    /// very same binary.
    @discardableResult
    func runChildHalfAsOtherUser(_ test: String, environment: [String: String]) throws -> String {
        guard geteuid() == 0 else { throw XCTSkip("running a child half as uid \(otherUserID) needs root") }
        let setpriv = "/usr/bin/setpriv"
        guard FileManager.default.isExecutableFile(atPath: setpriv) else {
            XCTFail("util-linux setpriv is not installed (scripts/setup installs it)")
            return ""
        }
        return try runChildHalf(test, environment: environment,
                                launcher: [setpriv, "--reuid=\(otherUserID)", "--regid=\(otherUserID)", "--clear-groups"])
    }
}

/// Files and modes for the cache-file tests.
enum CacheFiles {
    /// `lstat`'s mode bits (type and permissions) of `path`, or nil.
    static func mode(_ path: String) -> mode_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode : nil
    }

    /// `lstat`'s owner of `path`, or nil.
    static func owner(_ path: String) -> uid_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_uid : nil
    }

    /// Makes `path` a folder with `mode` exactly (not the umask's), owned by `owner` when given.
    static func makeFolder(_ path: String, mode: mode_t, owner: uid_t? = nil) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard chmod(path, mode) == 0 else { throw POSIXError(.EPERM) }
        if let owner, chown(path, owner, owner) != 0 { throw POSIXError(.EPERM) }
    }

    /// Makes an SQLite database of another program at `path`: a table with one row.
    static func makeForeignDatabase(_ path: String) throws {
        let other = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 1_000)
        try other.run("CREATE TABLE accounts (name TEXT, secret TEXT)")
        try other.run("INSERT INTO accounts VALUES ('alice', 'hunter2')")
    }

    /// Fails unless `cache` keeps nothing: a store is not read back, `isRefused` is true, and
    /// `takeWarning()` names `problem` once.
    static func assertRefused(_ cache: SQLiteURLCache, problem: String, file: StaticString = #filePath, line: UInt = #line) {
        let storage = CacheStorage(cache)
        XCTAssertNil(storage.storedResponse(for: StoredResponses.request), file: file, line: line)
        storage.store(StoredResponses.article(), for: StoredResponses.request)
        XCTAssertNil(storage.storedResponse(for: StoredResponses.request), "a refused cache kept an entry", file: file, line: line)
        cache.removeAllCachedResponses()
        XCTAssertTrue(cache.isRefused, file: file, line: line)
        let warning = cache.takeWarning()
        XCTAssertTrue(warning?.contains(problem) == true, "\(warning ?? "no warning")", file: file, line: line)
        XCTAssertNil(cache.takeWarning(), "told twice", file: file, line: line)
    }
}
