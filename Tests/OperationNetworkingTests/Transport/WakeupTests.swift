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

/// Idle keep-alive connections are kept for a bounded time and in a cache sized from the descriptor
/// limit, so connections the server closed long ago do not pile up in CLOSE-WAIT.
final class ConnectionCacheTests: ServerTestCase {
    func testTheCacheIsAQuarterOfTheDescriptorLimitWithinBounds() {
        XCTAssertEqual(NetworkThread.connectionCacheSize(forDescriptorLimit: 64), 16)
        XCTAssertEqual(NetworkThread.connectionCacheSize(forDescriptorLimit: 8), 4)
        XCTAssertEqual(NetworkThread.connectionCacheSize(forDescriptorLimit: 1 << 40), NetworkThread.maxActiveTransfers)
        XCTAssertEqual(NetworkThread.shared.idleConnectionLifetime, 30)
    }

    private func fetch(on thread: NetworkThread) {
        let done = expectation(description: "transfer ended")
        let recorder = submit("/echo", to: thread, done: done)
        wait(for: [done], timeout: 5)
        XCTAssertEqual(recorder.completed, true)
    }

    func testAConnectionIdleLongerThanTheLifetimeIsNotReused() {
        let shortLived = NetworkThread(idleConnectionLifetime: 1)
        defer { shortLived.shutDown() }
        fetch(on: shortLived)
        fetch(on: shortLived)
        XCTAssertEqual(server.acceptedConnections, 1, "reused while fresh")
        // Letting the connection sit idle past its lifetime is the behaviour under test, not a wait
        // for something to happen.
        Thread.sleep(forTimeInterval: 2.2)
        fetch(on: shortLived)
        XCTAssertEqual(server.acceptedConnections, 2, "a connection idle for 2 s was reused under a 1 s lifetime")
    }
}

/// Transfers past the active limit wait without a curl handle; the slots that ending transfers free
/// are filled in the same loop turn, not after the network thread's idle poll.
final class WaitingTransferTests: ServerTestCase {
    func testWaitingTransfersStartAsSoonAsEarlierOnesEnd() {
        // One slot: each transfer waits for the previous one, and each end leaves nothing on curl.
        let thread = NetworkThread(activeLimit: 1)
        defer { thread.shutDown() }
        let ends = (0..<3).map { expectation(description: "transfer \($0) ended") }
        let recorders = ends.map { submit("/echo", to: thread, done: $0) }
        // Under the 1 s a parked loop sleeps: one such sleep per waiting transfer would take 2 s.
        wait(for: ends, timeout: 0.9)
        XCTAssertEqual(recorders.map(\.completed), [true, true, true])
        XCTAssertEqual(server.requests(path: "/echo").count, 3)
    }
}

/// A thread that tests make ends when told to, without first sleeping out its idle poll.
final class NetworkThreadShutDownTests: ServerTestCase {
    func testShutDownDoesNotWaitOutTheIdlePoll() {
        let thread = NetworkThread()
        let ended = expectation(description: "transfer ended")
        _ = submit("/echo", to: thread, done: ended)
        wait(for: [ended], timeout: 5)
        XCTAssertTrue(eventually { thread.isParked })   // asleep in the 1 s poll of an idle loop
        let stopped = expectation(description: "thread shut down")
        DispatchQueue.global().async {
            thread.shutDown()
            stopped.fulfill()
        }
        wait(for: [stopped], timeout: 0.5)
    }

    /// A test-made thread that shuts down frees its multi handle (closing the connection it kept
    /// alive and libcurl's wake-up socket pair), its share handle and its pooled easy handles.
    func testShutDownFreesTheThreadsHandlesAndTheirDescriptors() {
        let descriptorsBefore = openDescriptors()
        let handlesBefore = CurlEasyHandle.liveCount
        var thread: NetworkThread? = NetworkThread()
        let ended = expectation(description: "transfer ended")
        if let thread { _ = submit("/echo", to: thread, done: ended) }
        wait(for: [ended], timeout: 5)
        XCTAssertEqual(server.openConnections, 1, "the connection is kept for reuse")
        XCTAssertEqual(CurlEasyHandle.liveCount, handlesBefore + 1, "the handle is pooled")
        thread?.shutDown()
        XCTAssertEqual(CurlEasyHandle.liveCount, handlesBefore)
        let server = self.server!
        XCTAssertTrue(eventually { server.openConnections == 0 }, "the kept connection is still open")
        thread = nil   // its eventfd goes with the object
        XCTAssertTrue(eventually { openDescriptors().subtracting(descriptorsBefore).isEmpty },
                      "still open: \(openDescriptors().subtracting(descriptorsBefore).sorted())")
    }
}

/// This process's open descriptors as "number → what it refers to" (a socket's inode names it, so a
/// number reused for something else counts as new).
private func openDescriptors() -> Set<String> {
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
