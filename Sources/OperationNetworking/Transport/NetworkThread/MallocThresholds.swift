import CCurl
import CCurlShim
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Allocator tuning for processes that ask for it: off by default, because the host process's
/// allocator belongs to its owner.
///
/// Opt in by starting the process with `OPERATIONNETWORKING_MALLOC_TUNING=1` in its environment (read
/// once, when the network thread starts). The network thread then does two things it otherwise never
/// does:
/// - Before its first transfer, it moves glibc's dynamic malloc thresholds once (`settled`), so that
///   libcurl's per-transfer buffers stop costing page faults.
/// - When it goes idle after a busy stretch (`IdleConnections.trimAfterTransfers` transfers), it calls
///   `malloc_trim(0)`, so that a daemon's resident size falls back after a burst.
///
/// Why the thresholds: libcurl 7.88 allocates a receive buffer (`Transfer.receiveBufferSize`) for every
/// transfer and an upload buffer for every transfer with a body, and frees both when the transfer
/// ends. glibc gives the top of a heap back to the kernel (`madvise(MADV_DONTNEED)`) when a free leaves
/// more than its trim threshold there: 128 KiB, until the process first frees a block larger than that
/// which it had `mmap`ed, after which it is twice that block's size. Whether the buffers land at the
/// top of the network thread's heap depends on the layout of the moment, so in some processes every
/// transfer returned their pages and faulted them in again. Allocating and freeing one 4 MiB block
/// puts glibc where it would be after any program has handled a 4 MiB buffer: blocks up to 4 MiB come
/// from the heap, and a heap keeps up to 8 MiB free at its top. No setting is forced (`mallopt` would
/// also switch the dynamic thresholds off); on another C library this is one allocation and nothing
/// more.
enum MallocThresholds {
    /// The environment variable that opts the process in, with the value `1`.
    static let environmentVariable = "OPERATIONNETWORKING_MALLOC_TUNING"

    /// Whether the process opted in; read from the environment once.
    static let optedIn = isOptIn(ProcessInfo.processInfo.environment[environmentVariable])

    /// Whether `value`, the environment variable's, opts in: only `1` does.
    static func isOptIn(_ value: String?) -> Bool {
        value == "1"
    }

    /// Done once per process, before the first transfer of a thread that tunes the allocator.
    static let settled: Void = {
        #if canImport(Glibc)
        guard let block = malloc(4 << 20) else { return }
        // An outside call that sees the pointer keeps the optimiser from removing the pair.
        _ = malloc_usable_size(block)
        free(block)
        #endif
    }()
}
