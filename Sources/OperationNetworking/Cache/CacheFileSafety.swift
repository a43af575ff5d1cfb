import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Why the cache's folder or files are not used, said in one sentence that names the path.
struct CacheFileRefusal: Error, CustomStringConvertible, Equatable {
    /// The folder or file refused.
    let path: String
    /// What is wrong with it: "is a symbolic link", "owned by uid 1000, not by 0", …
    let problem: String

    var description: String { "the HTTP cache's '\(path)' \(problem); the cache keeps no entries" }
}

/// Why the cache's folder could not be made or reached: the entries are then kept in memory.
struct CacheFileUnavailable: Error, CustomStringConvertible {
    let path: String
    let reason: String

    /// The sentence without what the library does about it, for a tool that stops instead.
    var failure: String { "the HTTP cache's '\(path)' cannot be created: \(reason)" }

    var description: String { failure + ", entries are kept in memory" }
}

/// The checks that keep the HTTP cache's files the user's alone, as OpenSSH does with `~/.ssh`.
///
/// Each folder the cache owns (the process folder and `org.operationnetworking.URLCache` above it for
/// the shared cache; the folder itself for `onet --cache-dir`) and each of its files (`cache.sqlite3`,
/// `-wal`, `-shm`, `-journal`) must be owned by the effective uid, not writable by its group or by
/// others, and not a symbolic link (`lstat`, so a link is seen, never followed). Anything else is
/// refused: another user who made the folder first could otherwise answer this user's requests with
/// rows of their own, or point the file at another program's database.
///
/// What is created is created for the user alone, whatever the umask: folders 0700, the database file
/// 0600 by `open(2)` with `O_EXCL | O_NOFOLLOW` before SQLite sees it (SQLite gives its `-wal` and
/// `-shm` the database file's mode). The process umask is never changed: it is process-wide.
///
/// A file the user owns whose mode lets others read it (made by an earlier version under umask 022) is
/// tightened to 0600 through a descriptor of that very file; a folder's read bits are left as they are
/// (a folder the user named may hold other things, and its listing shows only file names).
///
/// - Threading: stateless; any thread.
enum CacheFileSafety {
    /// The database's companions SQLite may create beside it.
    static let companionSuffixes = ["-wal", "-shm", "-journal"]

    /// An error of one call that the next may not meet (a process out of descriptors, say): neither a
    /// refusal nor a reason to leave the disk.
    struct Transient: Error {
        let code: Int32
    }

    /// Creates the missing folders up to `directory` (each 0700) and checks the last `ownedLevels` of
    /// them (`directory` and its parents): throws `CacheFileRefusal` for one not the user's alone, and
    /// `CacheFileUnavailable` when one cannot be made or looked at.
    static func prepareDirectory(_ directory: URL, ownedLevels: Int) throws {
        let path = directory.standardizedFileURL.path
        var components = path.split(separator: "/").map(String.init)
        var levels: [String] = []
        while !components.isEmpty {
            levels.insert("/" + components.joined(separator: "/"), at: 0)
            components.removeLast()
        }
        let owned = Set(levels.suffix(max(1, ownedLevels)))
        for level in levels {
            try makeIfMissing(level)
            if owned.contains(level) {
                try checkDirectory(level)
            }
        }
    }

    /// Checks that `path` is a folder that is the user's alone.
    static func checkDirectory(_ path: String) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { throw CacheFileUnavailable(path: path, reason: errorText(errno)) }
        try checkOwnership(status, path: path)
        guard status.st_mode & S_IFMT == S_IFDIR else { throw CacheFileRefusal(path: path, problem: "is not a directory") }
    }

    /// Checks the database file and its companions in a checked folder: each present one must be a
    /// regular file that is the user's alone (one others may read is tightened to 0600). When the
    /// database file is missing it is created, empty and 0600. Throws `CacheFileRefusal`,
    /// `CacheFileUnavailable` when it cannot be created, or `Transient`.
    static func prepareFile(_ path: String) throws {
        for suffix in [""] + companionSuffixes {
            let file = path + suffix
            var status = stat()
            if lstat(file, &status) != 0 {
                let code = errno
                guard code == ENOENT else { throw Transient(code: code) }
                guard suffix.isEmpty else { continue }
                // False when another process made it first: it is looked at like any file found.
                try createFile(file)
                guard lstat(file, &status) == 0 else { throw Transient(code: errno) }
            }
            try checkOwnership(status, path: file)
            guard status.st_mode & S_IFMT == S_IFREG else {
                throw CacheFileRefusal(path: file, problem: "is not a regular file")
            }
            if status.st_mode & 0o077 != 0 {
                tighten(file, status)
            }
        }
    }

    /// Whether `path`, found damaged by SQLite, may be deleted: a regular file (and companions) that
    /// is the user's alone. A link in its place is never followed nor deleted.
    static func mayReplace(_ path: String) -> Bool {
        for file in [path] + companionSuffixes.map({ path + $0 }) {
            var status = stat()
            guard lstat(file, &status) == 0 else {
                if errno == ENOENT { continue }
                return false
            }
            guard (try? checkOwnership(status, path: file)) != nil, status.st_mode & S_IFMT == S_IFREG else {
                return false
            }
        }
        return true
    }

    /// Deletes the damaged database file and its companions: `unlink(2)`, which removes a name, never
    /// a folder's contents.
    static func remove(_ path: String) {
        for file in [path] + companionSuffixes.map({ path + $0 }) {
            unlink(file)
        }
    }

    // MARK: - Private

    /// Owned by the effective uid, not writable by group or others, not a link.
    private static func checkOwnership(_ status: stat, path: String) throws {
        guard status.st_mode & S_IFMT != S_IFLNK else { throw CacheFileRefusal(path: path, problem: "is a symbolic link") }
        let user = geteuid()
        guard status.st_uid == user else {
            throw CacheFileRefusal(path: path, problem: "is owned by uid \(status.st_uid), not by \(user)")
        }
        let mode = String(status.st_mode & 0o7777, radix: 8)
        guard status.st_mode & 0o002 == 0 else {
            throw CacheFileRefusal(path: path, problem: "is writable by others (mode 0\(mode))")
        }
        guard status.st_mode & 0o020 == 0 else {
            throw CacheFileRefusal(path: path, problem: "is writable by its group (mode 0\(mode))")
        }
    }

    /// Makes the folder at `path`, 0700, unless something is there already.
    private static func makeIfMissing(_ path: String) throws {
        var status = stat()
        if lstat(path, &status) == 0 { return }
        guard errno == ENOENT else { throw CacheFileUnavailable(path: path, reason: errorText(errno)) }
        guard mkdir(path, 0o700) == 0 else {
            // Another process (or thread) made it meanwhile: it is checked like any folder found.
            if errno == EEXIST { return }
            throw CacheFileUnavailable(path: path, reason: errorText(errno))
        }
        // A umask that takes the owner's own bits away would leave a folder the cache cannot use.
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        if fstat(descriptor, &status) == 0, status.st_mode & 0o7777 != 0o700 {
            fchmod(descriptor, 0o700)
        }
    }

    /// Creates the database file 0600; false when another process made it first. SQLite then opens
    /// this file, and creates the companions with its mode.
    @discardableResult
    private static func createFile(_ path: String) throws -> Bool {
        let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            if code == EEXIST { return false }
            if [EACCES, EPERM, EROFS].contains(code) { throw CacheFileUnavailable(path: path, reason: errorText(code)) }
            throw Transient(code: code)
        }
        defer { close(descriptor) }
        // The umask may have taken bits of 0600 away; the file is this process's own, just made.
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & 0o7777 != 0o600 {
            fchmod(descriptor, 0o600)
        }
        return true
    }

    /// Sets the user's own file at `path` to 0600, through a descriptor of the very file `found`
    /// describes; left as it is when it cannot be opened (SQLite's own open then tells).
    private static func tighten(_ path: String, _ found: stat) {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_dev == found.st_dev, status.st_ino == found.st_ino else { return }
        fchmod(descriptor, 0o600)
    }

    private static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}

/// A cache that keeps its entries in files of its own and can say, once, why it does not use them
/// (`SQLiteURLCache`); the operations hand the sentence to `LoggingEventMonitor`.
protocol CacheFileWarnings: AnyObject {
    /// Whether the files are refused (the cache then keeps nothing), and the reason they are not used,
    /// to the first caller only (nil afterwards and while the files are used).
    func takeFileState() -> (isRefused: Bool, warning: String?)
    /// Why the last batch of writes failed for good (a full disk), to the first caller after it.
    func takeWriteFailure() -> String?
}
