import CLibFuzzer
import Foundation

/// The entry point every fuzz target's top-level code calls.
public enum FuzzDriver {
    /// Runs libFuzzer with the process arguments and `callback` as the target, or — given
    /// `--write-seeds DIR` — writes the target's seed inputs into DIR and returns (that is how the
    /// corpora under `Fuzz/Corpus` are made).
    public static func main(seeds: () -> [String: [UInt8]],
                            callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt {
        let arguments = CommandLine.arguments
        if arguments.count == 3, arguments[1] == "--write-seeds" {
            let directory = URL(fileURLWithPath: arguments[2], isDirectory: true)
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                for (name, bytes) in seeds() {
                    try Data(bytes).write(to: directory.appendingPathComponent(name))
                    // A seed must itself pass: a failing seed would stop every run at once.
                    _ = bytes.withUnsafeBufferPointer { callback($0.baseAddress, $0.count) }
                }
            } catch {
                FileHandle.standardError.write(Data("cannot write seeds: \(error)\n".utf8))
                return 1
            }
            return 0
        }
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        return LLVMFuzzerRunDriver(&argc, &argv, callback)
    }

    /// Stops the process the way libFuzzer reports as a crash (and saves the input), with `message`:
    /// a broken invariant, not a crash of the code under test, so it says which.
    public static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("INVARIANT BROKEN: \(message)\n".utf8))
        abort()
    }
}
