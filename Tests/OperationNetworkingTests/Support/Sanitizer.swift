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
