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

    /// The cache in `path`, the directory created when missing; a `ValidationError` naming `option`
    /// when it cannot be.
    static func open(_ path: String, option: String) throws -> URLCache {
        let directory = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("\(option): cannot create '\(directory.path)': \(FetchPlan.reason(error))")
        }
        return SQLiteURLCache(memoryCapacity: 0, diskCapacity: diskCapacity, directory: directory)
    }
}
