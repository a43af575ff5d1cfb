import Foundation
import XCTest

/// A leak LeakSanitizer must report: the proof that `.ci/lsan.supp` does not hide leaks made in a
/// test's own body. A suppression matches any frame of an allocation's stack, and every test body runs
/// below XCTest's frames, so one that names XCTest as a whole hides them all.
///
/// Skipped unless `ONET_LEAK_CANARY=1`; `scripts/check-lsan` runs it under AddressSanitizer and fails
/// unless LeakSanitizer reports `DeliberateLeak`.
final class LeakCanaryTests: LibraryTestCase {
    func testADeliberateLeakIsReported() throws {
        guard ProcessInfo.processInfo.environment["ONET_LEAK_CANARY"] == "1" else {
            throw XCTSkip("leaks on purpose; scripts/check-lsan runs it under AddressSanitizer")
        }
        DeliberateLeak.abandonCycles()
    }
}

/// Pairs that hold each other and nothing else holds: unreachable at exit, never freed.
private final class DeliberateLeak {
    private var partner: DeliberateLeak?
    private let payload = [UInt8](repeating: 0xA5, count: 1024)

    @inline(never)
    static func abandonCycles() {
        for _ in 0..<16 {
            let first = DeliberateLeak()
            let second = DeliberateLeak()
            first.partner = second
            second.partner = first
        }
    }
}
