import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A network thread that started while the process had no descriptors left (so neither libcurl's
/// wake-up socket pair nor the library's eventfd could be made) still takes new requests promptly once
/// descriptors are back, instead of at its next idle poll a second later.
final class WakeupTests: ServerTestCase {
    func testAThreadStartedWithoutDescriptorsIsWokenPromptly() throws {
        var saved = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)
        var none = saved
        none.rlim_cur = 0
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &none), 0)
        let thread = NetworkThread()          // its multi handle and eventfd cannot get descriptors now
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &saved), 0)
        defer { thread.shutDown() }

        for _ in 0..<3 {
            XCTAssertTrue(eventually { thread.isParked })
            let done = expectation(description: "transfer ended")
            let recorder = TransferOutcomeRecorder(done)
            let transfer = Transfer(request: request("/echo"), outputStream: nil, resumeFrom: nil, initialBody: Data(),
                                    delegate: recorder)
            thread.submit(.add(transfer))
            wait(for: [done], timeout: 0.8)   // the idle poll would take a second
            XCTAssertEqual(recorder.completed, true)
        }
    }
}

/// This process's open descriptors as "number → what it refers to" (a socket's inode names it, so a
/// number reused for something else counts as new).
func openDescriptors() -> Set<String> {
    let directory = "/proc/self/fd"
    let numbers = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return Set(numbers.compactMap { number in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\(number)")).map { "\(number) → \($0)" }
    })
}

extension ServerTestCase {
    /// Hands a GET of `path` on the test server straight to `thread`; the recorder fulfils `done` at
    /// the end.
    func submit(_ path: String, to thread: NetworkThread, done: XCTestExpectation) -> TransferOutcomeRecorder {
        submit(request(path), to: thread, done: done)
    }

    /// Hands `request` (to any server) straight to `thread`, as above.
    func submit(_ request: URLRequest, to thread: NetworkThread, done: XCTestExpectation) -> TransferOutcomeRecorder {
        let recorder = TransferOutcomeRecorder(done)
        thread.submit(.add(Transfer(request: request, outputStream: nil, resumeFrom: nil, initialBody: Data(),
                                    delegate: recorder)))
        return recorder
    }
}
