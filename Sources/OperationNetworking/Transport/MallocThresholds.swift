import CCurlShim
#if canImport(Glibc)
import Glibc
#endif

/// Moves glibc's dynamic malloc thresholds once, so that libcurl's per-transfer buffers stop costing
/// page faults.
///
/// libcurl 7.88 allocates a receive buffer (`Transfer.receiveBufferSize`, 256 KiB) for every transfer
/// and a 64 KiB upload buffer for every transfer with a body, and frees both when the transfer ends.
/// glibc gives the top of a heap back to the kernel (`madvise(MADV_DONTNEED)`) when a free leaves more
/// than its trim threshold there: 128 KiB, until the process first frees a block larger than that
/// which it had `mmap`ed, after which it is twice that block's size. Whether the buffers land at the
/// top of the network thread's heap depends on the layout of the moment, so in some runs every
/// transfer returned their pages and faulted them in again. Measured at W5 of the benchmark harness
/// (64 KiB POSTs, 8 at a time, 10,000 requests): with a 16 KiB receive buffer and a 1 MiB block here,
/// 10 runs of 10 fine; with the 256 KiB receive buffer and a 1 MiB block, 2 runs of 8 took ~100,000
/// minor faults instead of ~2,500 and 30 % fewer requests per second; with a 4 MiB block, 8 of 8 fine
/// (eight transfers' buffers, 2.5 MiB, stay under the 8 MiB it allows). Before any block: 110,000
/// faults in half of all runs (2026-11-23).
///
/// Allocating and freeing one 4 MiB block puts glibc where it would be after any program has handled a
/// 4 MiB buffer: blocks up to 4 MiB come from the heap, and a heap keeps up to 8 MiB free at its top.
/// Peak RSS did not move at W1, W2, W4, W6 or W8. No setting is forced (`mallopt` would also switch the
/// dynamic thresholds off); on another C library this is one allocation and nothing more.
enum MallocThresholds {
    /// Done once per process, before the first transfer.
    static let settled: Void = {
        #if canImport(Glibc)
        guard let block = malloc(4 << 20) else { return }
        // An outside call that sees the pointer keeps the optimiser from removing the pair.
        _ = malloc_usable_size(block)
        free(block)
        #endif
    }()
}
