import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// What the zstd decoder accepts before any body byte is produced.
final class ZstdWindowTests: LibraryTestCase {
    /// A frame header (magic number, descriptor without a content size, window descriptor) that asks
    /// for a window of 2^`log` bytes.
    private func frameHeader(windowLog: UInt8) -> [UInt8] {
        [0x28, 0xB5, 0x2F, 0xFD, 0x00, (windowLog - 10) << 3]
    }

    private func decode(_ bytes: [UInt8]) throws -> ContentDecoder.Result {
        let decoder = try XCTUnwrap(ContentDecoder(contentEncoding: "zstd"))
        return bytes.withUnsafeBytes { decoder.decode($0, into: { _ in true }) }
    }

    func testAWindowAbove8MiBIsRefusedBeforeItIsAllocated() throws {
        XCTAssertEqual(try decode(frameHeader(windowLog: 23)), .ok, "8 MiB, what RFC 9659 lets encoders use")
        XCTAssertEqual(try decode(frameHeader(windowLog: 27)), .damaged, "128 MiB")
    }
}
