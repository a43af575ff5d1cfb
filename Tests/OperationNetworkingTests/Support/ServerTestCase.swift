import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A test case with a fresh loopback server per test, and helpers to run operations to completion.
class ServerTestCase: LibraryTestCase {
    /// The server of the running test.
    var server: TestServer!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try TestServer()
    }

    override func tearDown() {
        server?.shutdown()
        server = nil
        super.tearDown()
    }

    /// A request for a path on the test server.
    func request(_ path: String, method: String = "GET", timeout: TimeInterval = 10) -> URLRequest {
        var request = URLRequest(url: server.url(path))
        request.httpMethod = method
        request.timeoutInterval = timeout
        return request
    }

    /// Runs a request and returns its outcome.
    func run(_ request: URLRequest, timeout: TimeInterval = 10) -> (HTTPRequestOperation, Outcome) {
        let operation = HTTPRequestOperation(request: request)
        return (operation, run(operation, timeout: timeout))
    }

    /// The JSON the server's /echo route answered with.
    func echo(_ operation: HTTPRequestOperation) -> [String: Any] {
        guard let data = operation.responseData,
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return object
    }

}

extension XCTestCase {
    /// Sets success and failure blocks that record the outcome and fulfil the returned expectation.
    func recordOutcome(of operation: HTTPRequestOperation) -> (XCTestExpectation, OutcomeBox) {
        let done = expectation(description: "operation handlers")
        let box = OutcomeBox()
        operation.setCompletionBlockWithSuccess({ _, object in
            box.set(.success(SendableAny(object)))
            done.fulfill()
        }, failure: { _, error in
            box.set(.failure(error))
            done.fulfill()
        })
        return (done, box)
    }

    /// Runs `operation` (by hand, no queue) and waits until its success or failure block ran.
    @discardableResult
    func run(_ operation: HTTPRequestOperation, timeout: TimeInterval = 10) -> Outcome {
        let (done, box) = recordOutcome(of: operation)
        operation.start()
        wait(for: [done], timeout: timeout)
        return box.value ?? .failure(URLError(.unknown))
    }

    /// Starts `operation` (by hand, no queue) and waits until at least `bytes` body bytes arrived
    /// (its download progress block is taken for this).
    func startAndAwaitBytes(_ operation: HTTPRequestOperation, atLeast bytes: Int64 = 20_000, timeout: TimeInterval = 10) {
        let someBytes = expectation(description: "\(bytes) bytes")
        someBytes.assertForOverFulfill = false
        operation.setDownloadProgressBlock { _, total, _ in if total >= bytes { someBytes.fulfill() } }
        operation.start()
        wait(for: [someBytes], timeout: timeout)
    }

    /// Starts `operation`, pauses it once 20,000 body bytes arrived and waits for the pause to be
    /// reported; returns the expectation its handlers fulfil and the box they record into.
    func startAndPause(_ operation: HTTPRequestOperation) -> (XCTestExpectation, OutcomeBox) {
        let (done, box) = recordOutcome(of: operation)
        let pausedNotice = expectation(forNotification: .operationDidFinish, object: operation)
        startAndAwaitBytes(operation, timeout: 5)
        operation.pause()
        XCTAssertTrue(operation.isPaused)
        XCTAssertFalse(operation.isExecuting)
        XCTAssertFalse(operation.isFinished)
        wait(for: [pausedNotice], timeout: 5)
        return (done, box)
    }

    /// Waits (polling, bounded) until `condition` holds; for effects that have no callback.
    func eventually(timeout: TimeInterval = 5, _ condition: @escaping @Sendable () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            let tick = expectation(description: "tick")
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { tick.fulfill() }
            wait(for: [tick], timeout: 1)
        }
        return condition()
    }

    /// Runs `onet` with `arguments`; returns its exit status and standard output.
    func runOnet(_ arguments: [String]) throws -> (Int32, String) {
        let output = Pipe()
        let (process, finished) = try launchOnet(arguments, output: output)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        wait(for: [finished], timeout: 60)
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// The `onet` executable built next to the test bundle (the cross-process tests run it).
    func onetExecutable() throws -> URL {
        let directory = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).deletingLastPathComponent()
        guard let found = [directory, directory.deletingLastPathComponent()].map({ $0.appendingPathComponent("onet") })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw XCTSkip("onet is not built next to the tests (run `swift build` first)")
        }
        return found
    }

    /// Runs one GET of `url` with `policy` (and a client certificate); the error, if it failed.
    func fetch(_ url: URL, policy: SecurityPolicy, clientCertificate: ClientCertificate? = nil) -> Error? {
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.securityPolicy = policy
        operation.clientCertificate = clientCertificate
        return run(operation).error
    }
}

/// How an operation ended.
enum Outcome {
    case success(SendableAny)
    case failure(Error)

    var error: Error? {
        if case .failure(let error) = self { return error }
        return nil
    }

    var urlErrorCode: URLError.Code? { (error as? URLError)?.code }
    var isSuccess: Bool { error == nil }
}

/// A response object carried across threads in tests.
struct SendableAny: @unchecked Sendable {   // immutable; only read after the handler's expectation fulfilled
    let value: Any?
    init(_ value: Any?) { self.value = value }
}

/// Written once by a handler, read after the expectation; guarded by `lock`.
final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Outcome?   // guarded by lock
    func set(_ outcome: Outcome) { lock.withLock { stored = outcome } }
    var value: Outcome? { lock.withLock { stored } }
}

/// A lock-protected list for recording events from several threads in order.
final class Recorder<T>: @unchecked Sendable {   // every access goes through `lock`
    private let lock = NSLock()
    private var items: [T] = []   // guarded by lock
    func append(_ item: T) { lock.withLock { items.append(item) } }
    var all: [T] { lock.withLock { items } }
    var count: Int { lock.withLock { items.count } }
}

/// Expected body of the server's /bytes/<n> route.
func deterministicBytes(_ count: Int, from start: Int = 0) -> Data {
    Data((start..<(start + count)).map { UInt8($0 % 251) })
}

/// Open file descriptors of this process. libdispatch and the main run loop open descriptors of
/// their own the first time they are used in a certain way in a process (a timer of a given kind, the
/// main queue served by the run loop) and keep them; whether a test's first `wait` or `eventually`
/// gets that far depends on how soon its expectations are met. The first count makes the same use
/// of them `eventually` makes, so that a test that runs first in its process does not see their
/// descriptors as its own leak.
func openFileDescriptorCount() -> Int {
    if Thread.isMainThread { _ = dispatchDescriptorsOpened }
    return (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// One `eventually` tick, once per process, on the main thread (see `openFileDescriptorCount`).
private let dispatchDescriptorsOpened: Void = {
    let tick = XCTestExpectation(description: "tick")
    DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { tick.fulfill() }
    _ = XCTWaiter.wait(for: [tick], timeout: 10)
}()
