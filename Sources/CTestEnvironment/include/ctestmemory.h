#ifndef CTESTMEMORY_H
#define CTESTMEMORY_H

#include <malloc.h>
#include <stddef.h>

/// Bytes glibc's allocator has handed out and not taken back, heap and mmapped chunks together
/// (mallinfo2's `uordblks + hblkhd`): what live objects hold, whatever the allocator keeps cached.
/// Glibc's Swift module leaves malloc.h out, so the tests read it through this header.
static inline size_t ctest_allocated_bytes(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

#endif
