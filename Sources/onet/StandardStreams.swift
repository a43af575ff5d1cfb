import Foundation

/// Writes to standard output and error without trapping. corelibs' `FileHandle.write(_:)` is a
/// `try!` over `write(contentsOf:)`, so a full disk behind `>` or a closed descriptor (`2>&-`) would
/// crash the tool instead of letting it report and exit.
enum StandardStreams {
    /// Writes `data` to `handle`; false when the descriptor refused it.
    @discardableResult
    static func write(_ data: Data, to handle: FileHandle) -> Bool {
        do {
            try handle.write(contentsOf: data)
            return true
        } catch {
            return false
        }
    }

    /// Writes `text` as UTF-8 to `handle`; false when the descriptor refused it.
    @discardableResult
    static func write(_ text: String, to handle: FileHandle) -> Bool {
        write(Data(text.utf8), to: handle)
    }
}
