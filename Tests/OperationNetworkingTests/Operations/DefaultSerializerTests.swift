import Dispatch
import Foundation
import Synchronization
@testable import OperationNetworking
import XCTest

/// An operation's default response serializer is made on first use, once, and is the one its end
/// validates with: settings made on it before the start hold.
final class DefaultSerializerTests: ServerTestCase {
    func testTheDefaultSerializerIsMadeOnceWhenFirstReadsRace() {
        for _ in 0..<200 {
            let operation = HTTPRequestOperation(request: request("/status/200"))
            let seen = Protected<[ObjectIdentifier]>([])
            let arrived = Atomic<Int>(0)
            let done = DispatchGroup()
            for _ in 0..<2 {
                done.enter()
                // Threads of their own, so each runs even while the other spins.
                Thread {
                    // Both read at once: each waits until the other has arrived.
                    arrived.add(1, ordering: .acquiringAndReleasing)
                    while arrived.load(ordering: .acquiring) < 2 {}
                    let serializer = operation.responseSerializer
                    seen.withLock { $0.append(ObjectIdentifier(serializer)) }
                    done.leave()
                }.start()
            }
            XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
            XCTAssertEqual(Set(seen.value).count, 1, "both first reads got the same serializer")
            XCTAssertTrue(type(of: operation.responseSerializer) == HTTPResponseSerializer.self)
        }
    }

    func testSettingsMadeOnTheDefaultSerializerValidateTheResponse() throws {
        let operation = HTTPRequestOperation(request: request("/status/200"))
        operation.responseSerializer.acceptableStatusCodes = IndexSet(integer: 201)
        guard case .failure(let error) = run(operation) else {
            return XCTFail("a 200 passed a serializer that accepts only 201")
        }
        XCTAssertEqual((error as NSError).code, NSURLErrorBadServerResponse)
    }
}
