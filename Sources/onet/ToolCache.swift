import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
// The library's SQLite store is not public API; the tool takes it through its SPI so that
// `--cache-dir` keeps the same store the library uses by default.
@_spi(Tool) import OperationNetworking

/// `--cache-dir` of `onet request` and `onet fetch`: an HTTP cache (RFC 9111, the library's) whose
/// entries live in one SQLite file in the directory, kept between runs.
enum ToolCache {
    /// The bytes the entries may take. The library stores a response up to about 5 % of it (12.8 MiB).
    static let diskCapacity = 256 << 20

    /// The cache in `path`, the directory created (0700) when missing; a `ValidationError` naming
    /// `option` when it cannot be, or when the folder or its `cache.sqlite3` is not the user's alone
    /// (another user's, writable by others, a symbolic link, another program's database): the tool then
    /// stops before any request rather than use or change it.
    static func open(_ path: String, option: String) throws -> URLCache {
        let directory = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
        let cache = SQLiteURLCache(memoryCapacity: 0, diskCapacity: diskCapacity, directory: directory)
        do {
            try cache.checkFiles()
        } catch {
            throw ValidationError("\(option): \(error)")
        }
        return cache
    }

    /// Writes what `cache` holds to its file now (its stores are reported `.stored` once written).
    static func flush(_ cache: URLCache?) {
        (cache as? SQLiteURLCache)?.flush()
    }
}
