import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// The sanitizer this test binary was built with (`swift test --sanitize=…`), known by its runtime's
/// entry point: Swift has no compile-time condition for it.
enum Sanitizer {
    /// Whether AddressSanitizer (and with it LeakSanitizer) is in the process.
    static let address = dlsym(nil, "__asan_init") != nil
}

extension XCTestCase {
    /// Under AddressSanitizer, runs this test with an in-memory URLCache. corelibs' disk cache archives
    /// each stored body through `Data._bridgeToObjectiveC()` and never releases it, so LeakSanitizer
    /// reports the body buffer the transfer allocated — a corelibs leak, not this library's. Other runs
    /// keep `URLCache.shared` as it is.
    func useMemoryOnlyURLCacheUnderAddressSanitizer() {
        guard Sanitizer.address else { return }
        let shared = URLCache.shared
        URLCache.shared = URLCache(memoryCapacity: 4 << 20, diskCapacity: 0, diskPath: nil)
        addTeardownBlock { URLCache.shared = shared }
    }
}
