// `floor --own-footprint FUNCTIONS`: a library's own code footprint made synthetic. Each of the
// functions below is straight-line code of its own (64-bit constants that differ from function to
// function, so no two can be merged), about 100 instructions in 408 bytes (six or seven 64-byte lines),
// run once per call. A request that calls N of them touches N functions' worth of code once, as onet's
// own per-request path touches about 170 functions about once each (bench/README.md, round 17): the
// instructions are few and cheap, and what they cost is fetching the code. They are called in a
// scattered order (seven functions, about 3 KiB, apart), as a library's functions lie across its
// binary: called in address order, the processor's prefetching would hide the fetching. (Each starting
// a page of its own would crowd them into a few cache sets, which a library's code does not.)
#include "cfloorcurl.h"
#include <stdint.h>

#define FLOOR_FP_STEP(k) \
    x ^= x >> 29; \
    x *= 0x9E3779B97F4A7C15ull ^ (seed + (k)); \
    x += (uint64_t)(k) << 7;

// Sixteen steps, `k + 1` to `k + 16`: a function's whole body, or a block of the paged ones' padding.
#define FLOOR_FP_STEPS16(k) FLOOR_FP_STEP((k) + 1) FLOOR_FP_STEP((k) + 2) FLOOR_FP_STEP((k) + 3) \
    FLOOR_FP_STEP((k) + 4) FLOOR_FP_STEP((k) + 5) FLOOR_FP_STEP((k) + 6) FLOOR_FP_STEP((k) + 7) \
    FLOOR_FP_STEP((k) + 8) FLOOR_FP_STEP((k) + 9) FLOOR_FP_STEP((k) + 10) FLOOR_FP_STEP((k) + 11) \
    FLOOR_FP_STEP((k) + 12) FLOOR_FP_STEP((k) + 13) FLOOR_FP_STEP((k) + 14) FLOOR_FP_STEP((k) + 15) \
    FLOOR_FP_STEP((k) + 16)

#define FLOOR_FP(n) \
    __attribute__((noinline, aligned(64))) static uint64_t floor_fp_##n(uint64_t x) { \
        const uint64_t seed = (uint64_t)(n) * 0xD1B54A32D192ED03ull; \
        FLOOR_FP_STEPS16(0) \
        return x; \
    }
#define FLOOR_FP10(a) FLOOR_FP(a##0) FLOOR_FP(a##1) FLOOR_FP(a##2) FLOOR_FP(a##3) FLOOR_FP(a##4) \
    FLOOR_FP(a##5) FLOOR_FP(a##6) FLOOR_FP(a##7) FLOOR_FP(a##8) FLOOR_FP(a##9)
#define FLOOR_FP100(a) FLOOR_FP10(a##0) FLOOR_FP10(a##1) FLOOR_FP10(a##2) FLOOR_FP10(a##3) FLOOR_FP10(a##4) \
    FLOOR_FP10(a##5) FLOOR_FP10(a##6) FLOOR_FP10(a##7) FLOOR_FP10(a##8) FLOOR_FP10(a##9)

// Functions 100-399.
FLOOR_FP100(1) FLOOR_FP100(2) FLOOR_FP100(3)

// `--own-footprint-pages`: the same kind of functions, each carrying about 3.7 KiB of code that is
// never run (a branch on a flag that is never set, laid out after the function's return), so that
// each lies on a page of its own at an offset that moves from one to the next (spread over the
// cache's sets): the footprint of the same lines over as many pages as functions.
static volatile int floor_fp_never;   // never set: what keeps the padding code in the binary
#define FLOOR_FPP(n) \
    __attribute__((noinline, aligned(64))) static uint64_t floor_fpp_##n(uint64_t x) { \
        const uint64_t seed = (uint64_t)(n) * 0xD1B54A32D192ED03ull; \
        FLOOR_FP_STEPS16(0) \
        if (__builtin_expect(floor_fp_never, 0)) { \
            FLOOR_FP_STEPS16(100) FLOOR_FP_STEPS16(200) FLOOR_FP_STEPS16(300) FLOOR_FP_STEPS16(400) \
            FLOOR_FP_STEPS16(500) FLOOR_FP_STEPS16(600) FLOOR_FP_STEPS16(700) FLOOR_FP_STEPS16(800) \
            FLOOR_FP_STEPS16(900) \
        } \
        return x; \
    }
#define FLOOR_FPP10(a) FLOOR_FPP(a##0) FLOOR_FPP(a##1) FLOOR_FPP(a##2) FLOOR_FPP(a##3) FLOOR_FPP(a##4) \
    FLOOR_FPP(a##5) FLOOR_FPP(a##6) FLOOR_FPP(a##7) FLOOR_FPP(a##8) FLOOR_FPP(a##9)
#define FLOOR_FPP100(a) FLOOR_FPP10(a##0) FLOOR_FPP10(a##1) FLOOR_FPP10(a##2) FLOOR_FPP10(a##3) \
    FLOOR_FPP10(a##4) FLOOR_FPP10(a##5) FLOOR_FPP10(a##6) FLOOR_FPP10(a##7) FLOOR_FPP10(a##8) FLOOR_FPP10(a##9)

// Paged functions 100-299.
FLOOR_FPP100(1) FLOOR_FPP100(2)

#define FLOOR_ENTRY(prefix, n) prefix##n,
#define FLOOR_ENTRY10(prefix, a) FLOOR_ENTRY(prefix, a##0) FLOOR_ENTRY(prefix, a##1) FLOOR_ENTRY(prefix, a##2) \
    FLOOR_ENTRY(prefix, a##3) FLOOR_ENTRY(prefix, a##4) FLOOR_ENTRY(prefix, a##5) FLOOR_ENTRY(prefix, a##6) \
    FLOOR_ENTRY(prefix, a##7) FLOOR_ENTRY(prefix, a##8) FLOOR_ENTRY(prefix, a##9)
#define FLOOR_ENTRY100(prefix, a) FLOOR_ENTRY10(prefix, a##0) FLOOR_ENTRY10(prefix, a##1) \
    FLOOR_ENTRY10(prefix, a##2) FLOOR_ENTRY10(prefix, a##3) FLOOR_ENTRY10(prefix, a##4) \
    FLOOR_ENTRY10(prefix, a##5) FLOOR_ENTRY10(prefix, a##6) FLOOR_ENTRY10(prefix, a##7) \
    FLOOR_ENTRY10(prefix, a##8) FLOOR_ENTRY10(prefix, a##9)

static uint64_t (*const floor_fp_table[])(uint64_t) = {
    FLOOR_ENTRY100(floor_fp_, 1) FLOOR_ENTRY100(floor_fp_, 2) FLOOR_ENTRY100(floor_fp_, 3)
};
static uint64_t (*const floor_fpp_table[])(uint64_t) = {
    FLOOR_ENTRY100(floor_fpp_, 1) FLOOR_ENTRY100(floor_fpp_, 2)
};

/// Runs functions `first` ..< `first + count` of `table` (clamped to its `size`) in turn on `x`. `size`
/// is 300 or 200, both coprime with 7, so index -> index * 7 % size visits each function once, out of
/// address order.
static uint64_t floor_run(uint64_t (*const *table)(uint64_t), long size, long first, long count, uint64_t x) {
    long end = first + count;
    if (first < 0) first = 0;
    if (end > size) end = size;
    for (long index = first; index < end; index++) x = table[(index * 7) % size](x);
    return x;
}

long floor_footprint_functions(void) {
    return (long)(sizeof floor_fp_table / sizeof floor_fp_table[0]);
}

unsigned long long floor_footprint(long first, long count, unsigned long long value) {
    return floor_run(floor_fp_table, floor_footprint_functions(), first, count, value);
}

long floor_footprint_paged_functions(void) {
    return (long)(sizeof floor_fpp_table / sizeof floor_fpp_table[0]);
}

unsigned long long floor_footprint_paged(long first, long count, unsigned long long value) {
    return floor_run(floor_fpp_table, floor_footprint_paged_functions(), first, count, value);
}

// `floor --own-data LINES`: a library's own data footprint made synthetic. Each call reads LINES
// distinct 64-byte lines of a 1 MiB region (larger than a level-1 data cache, smaller than the
// machine's last-level cache, as a library's freshly made and freed objects are) and writes every
// fourth, each thread from where its last call stopped, in a scattered order (an odd multiplier is a
// permutation of the 16,384 lines) so that no prefetcher can follow it.
static unsigned char floor_data[1 << 20] __attribute__((aligned(64)));
static _Thread_local unsigned long floor_data_cursor;

unsigned long long floor_data_touch(long lines, unsigned long long value) {
    const unsigned long count = sizeof floor_data / 64;
    for (long line = 0; line < lines; line++) {
        unsigned char *byte = floor_data + ((floor_data_cursor * 2654435761ul) % count) * 64;
        value = value * 31 + *byte;
        if ((line & 3) == 0) *byte = (unsigned char)value;
        floor_data_cursor++;
    }
    return value;
}
