import CCurl
import CCurlShim
#if canImport(Glibc)
import Glibc
#endif

/// Moves glibc's dynamic malloc thresholds once, so that libcurl's per-transfer buffers stop costing
/// page faults.
///
/// libcurl 7.88 allocates a receive buffer (`Transfer.receiveBufferSize`) for every transfer and an
/// upload buffer for every transfer with a body, and frees both when the transfer ends. glibc gives
/// the top of a heap back to the kernel (`madvise(MADV_DONTNEED)`) when a free leaves more than its
/// trim threshold there: 128 KiB, until the process first frees a block larger than that which it had
/// `mmap`ed, after which it is twice that block's size. Whether the buffers land at the top of the
/// network thread's heap depends on the layout of the moment, so in some processes every transfer
/// returned their pages and faulted them in again.
///
/// Allocating and freeing one 4 MiB block puts glibc where it would be after any program has handled a
/// 4 MiB buffer: blocks up to 4 MiB come from the heap, and a heap keeps up to 8 MiB free at its top,
/// room for the buffers of the transfers an upload-heavy load keeps in flight (a smaller block left
/// too little once the receive buffer grew; `bench/README.md` has the runs). No setting is forced
/// (`mallopt` would also switch the dynamic thresholds off); on another C library this is one
/// allocation and nothing more.
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
