import Foundation

/// Monotonic clock in nanoseconds (`CLOCK_MONOTONIC`). Its values are only ever compared with each other.
func monotonicNow() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(truncatingIfNeeded: time.tv_sec) &* 1_000_000_000 &+ UInt64(truncatingIfNeeded: time.tv_nsec)
}
