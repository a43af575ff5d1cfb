import CCurlShim
#if canImport(Glibc)
import Glibc
#endif

/// Moves glibc's dynamic malloc thresholds once, so that libcurl's per-transfer upload buffer stops
/// costing page faults.
///
/// libcurl 7.88 allocates a 64 KiB upload buffer for every transfer with a body and frees it when the
/// transfer ends. glibc gives the top of a heap back to the kernel (`madvise(MADV_DONTNEED)`) when a
/// free leaves more than its trim threshold there: 128 KiB, until the process first frees a block
/// larger than that which it had `mmap`ed, after which it is twice that block's size. Whether the
/// buffer lands at the top of the network thread's heap depends on the layout of the moment, so in
/// about half of all runs each 64 KiB POST returned its pages and faulted them in again: 11 page
/// faults per request, twice the system time, 30 % fewer requests per second (measured at W5 of the
/// benchmark harness: 14,000 against 22,000 requests/s, ~110,000 against ~3,000 minor faults per
/// 10,000 requests).
///
/// Allocating and freeing one 1 MiB block puts glibc where it would be after any program has handled a
/// 1 MiB buffer: blocks up to 1 MiB come from the heap, and a heap keeps up to 2 MiB free at its top.
/// No setting is forced (`mallopt` would also switch the dynamic thresholds off); on another C library
/// this is one allocation and nothing more.
enum MallocThresholds {
    /// Done once per process, before the first transfer.
    static let settled: Void = {
        #if canImport(Glibc)
        guard let block = malloc(1 << 20) else { return }
        // An outside call that sees the pointer keeps the optimiser from removing the pair.
        _ = malloc_usable_size(block)
        free(block)
        #endif
    }()
}
