import Dispatch
import Foundation
import OperationNetworking
import XCTest

/// A block, monitor or anything else a user handed over runs no code with a library lock held, not
/// even its `deinit` when it is replaced: an object that reads its owner as it goes away (a common
/// shape of weak back-references) must not deadlock the thread that replaced it.
final class ReleasedWithoutLockTests: LibraryTestCase {
    /// Calls `read` when released.
    private final class ReadsWhenReleased: Sendable {
        let read: @Sendable () -> Void
        init(_ read: @escaping @Sendable () -> Void) { self.read = read }
        deinit { read() }
    }

    /// A monitor that reads its operation's monitors when released.
    private final class ReadingMonitor: EventMonitor {
        weak let operation: URLConnectionOperation?
        init(_ operation: URLConnectionOperation) { self.operation = operation }
        deinit { _ = operation?.eventMonitors }
    }

    /// Signalled by each `ReadsWhenReleased` after its read: proof the old value really went away.
    private let released = DispatchSemaphore(value: 0)

    /// Something holding an object that calls `read` when released; made here, so nothing but the
    /// returned closure holds it.
    private func holding(_ read: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let released = self.released
        let reader = ReadsWhenReleased {
            read()
            released.signal()
        }
        return { withExtendedLifetime(reader) {} }
    }

    private static func queryBlock(_ hold: @escaping @Sendable () -> Void) -> HTTPRequestSerializer.QueryStringSerialization {
        { _, _ in
            hold()
            return ""
        }
    }

    private static func statusBlock(_ hold: @escaping @Sendable () -> Void) -> @Sendable (NetworkReachabilityStatus) -> Void {
        { _ in hold() }
    }

    /// Runs `body` on a thread of its own; false when it did not return within 10 seconds (it
    /// deadlocked: the thread is left blocked, and the test fails).
    private func returns(_ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        return done.wait(timeout: .now() + 10) == .success
    }

    func testReplacingAQueryBlockReleasesTheOldOneWithNoLockHeld() {
        let serializer = HTTPRequestSerializer()
        // No local keeps the holder: only the block does.
        serializer.setQueryStringSerialization(Self.queryBlock(holding { [weak serializer] in _ = serializer?.httpRequestHeaders }))
        XCTAssertTrue(returns { serializer.setQueryStringSerialization(nil) }, "replacing the query block deadlocked")
        XCTAssertEqual(released.wait(timeout: .now()), .success, "the old block was not released")
    }

    func testReplacingTheReachabilityBlockReleasesTheOldOneWithNoLockHeld() throws {
        let manager = try XCTUnwrap(NetworkReachabilityManager(address: "127.0.0.1"))
        manager.setReachabilityStatusChange(Self.statusBlock(holding { [weak manager] in _ = manager?.callbackQueue }))
        XCTAssertTrue(returns { manager.setReachabilityStatusChange(nil) }, "replacing the status block deadlocked")
        XCTAssertEqual(released.wait(timeout: .now()), .success, "the old block was not released")
    }

    func testReplacingEventMonitorsReleasesTheOldOnesWithNoLockHeld() throws {
        let operation = URLConnectionOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "http://127.0.0.1:9/"))))
        operation.eventMonitors = [ReadingMonitor(operation)]
        XCTAssertTrue(returns { operation.eventMonitors = [] }, "replacing the event monitors deadlocked")
    }
}
