import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where the library's shared cache lives: `<cache home>/org.operationnetworking.URLCache/<process name>`.
///
/// The cache home follows the XDG Base Directory rules: `$XDG_CACHE_HOME` when it is an absolute path,
/// else `$HOME/.cache` when `$HOME` is an absolute path, else `.cache` in the home the password
/// database gives the effective user (`$HOME` comes first, as every XDG program reads it: a process
/// run with another `HOME` expects its caches there).
///
/// - Threading: stateless; any thread.
enum SharedCacheLocation {
    /// The folder the library owns inside the cache home, one process folder per program in it.
    static let folderName = "org.operationnetworking.URLCache"

    /// The shared cache's folder for `environment` and `processName`; `passwordHome` is asked only when
    /// neither variable is an absolute path.
    static func directory(environment: [String: String], processName: String,
                          passwordHome: () -> String? = SharedCacheLocation.passwordDatabaseHome) -> URL {
        let home: URL
        if let configured = environment["XDG_CACHE_HOME"], configured.hasPrefix("/") {
            home = URL(fileURLWithPath: configured, isDirectory: true)
        } else if let userHome = environment["HOME"], userHome.hasPrefix("/") {
            home = URL(fileURLWithPath: userHome, isDirectory: true).appendingPathComponent(".cache", isDirectory: true)
        } else {
            let fallback = passwordHome() ?? FileManager.default.homeDirectoryForCurrentUser.path
            home = URL(fileURLWithPath: fallback, isDirectory: true).appendingPathComponent(".cache", isDirectory: true)
        }
        // A process name cannot hold "/", but keep the folder one path component whatever it is.
        let processFolder = processName.replacingOccurrences(of: "/", with: "_")
        return home.appendingPathComponent(folderName, isDirectory: true)
            .appendingPathComponent(processFolder, isDirectory: true)
    }

    /// The effective user's home in the password database, or nil.
    static func passwordDatabaseHome() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil,
              let directory = entry.pw_dir else { return nil }
        return String(cString: directory)
    }
}
