import CTestEnvironment
import Foundation
@testable import OperationNetworking
import XCTest

/// A finished operation keeps its outcome and nothing of its transfer (issue 58): apps keep finished
/// operations (in arrays, batches, archives), so what a transfer needed while it ran — the content
/// decoder and its buffers, the trust store, the network thread — must not live as long as they do.
final class FinishedOperationMemoryTests: ServerTestCase {
    private static let count = 1_000
    private static let bodyLength = 11_000   // what /gzip inflates to

    /// Bytes the process's allocator has handed out and not taken back: what the kept operations
    /// hold, whatever the allocator keeps cached or has not returned to the kernel (unlike RSS).
    private func allocatedBytes() -> Int {
        Int(ctest_allocated_bytes())
    }

    /// Runs `count` GETs of /gzip (compressed on the wire unless `plain`), keeps every finished
    /// operation, and returns them with the growth of the allocated bytes they caused.
    private func runAndKeep(_ count: Int, plain: Bool) -> (operations: [HTTPRequestOperation], growth: Int) {
        let before = allocatedBytes()
        var operations: [HTTPRequestOperation] = []
        operations.reserveCapacity(count)
        for _ in 0..<count {
            var request = request("/gzip")
            if plain { request.setValue("identity", forHTTPHeaderField: "Accept-Encoding") }
            let operation = HTTPRequestOperation(request: request)
            operation.urlCache = nil   // the cache's own entries are not what is measured
            operations.append(operation)
        }
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 8
        queue.addOperations(operations, waitUntilFinished: true)
        // The library's own notices of these operations, still queued, are not what is measured either.
        CallbackQueues.delivery.sync {}
        CallbackQueues.callback.sync {}
        return (operations, allocatedBytes() - before)
    }

    /// 1,000 finished gzip operations kept in an array cost no more than 1,000 uncompressed ones of the
    /// same body, within 2 MiB: before, each kept its last transfer and with it the gzip decoder
    /// (about 14.5 KB an operation, 14 MiB in all).
    func testFinishedCompressedOperationsCostNoMoreThanUncompressedOnes() throws {
        // Warm-up: connections, the network thread, every lazily made structure of both paths.
        _ = runAndKeep(50, plain: false)
        _ = runAndKeep(50, plain: true)

        let plain = runAndKeep(Self.count, plain: true)
        let compressed = runAndKeep(Self.count, plain: false)
        for (name, kept) in [("plain", plain.operations), ("gzip", compressed.operations)] {
            XCTAssertTrue(kept.allSatisfy { $0.isFinished && $0.error == nil }, "\(name): every operation succeeded")
            XCTAssertTrue(kept.allSatisfy { $0.responseData?.count == Self.bodyLength }, "\(name): every body kept")
        }
        let encodings = Set(compressed.operations.compactMap { $0.response?.value(forHTTPHeaderField: "Content-Encoding") })
        XCTAssertEqual(encodings, ["gzip"], "the compressed run was compressed on the wire")
        XCTAssertTrue(plain.operations.allSatisfy { $0.response?.value(forHTTPHeaderField: "Content-Encoding") == nil })

        let extra = compressed.growth - plain.growth
        XCTAssertLessThan(extra, 2 << 20, """
            1,000 finished gzip operations took \(compressed.growth) bytes, 1,000 uncompressed ones \(plain.growth): \
            \(extra / Self.count) bytes more each
            """)
        withExtendedLifetime((plain.operations, compressed.operations)) {}
    }
}
