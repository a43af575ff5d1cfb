import Foundation
import OperationNetworking
import XCTest

/// Blocks as AFNetworking ran them: the inherited `completionBlock` on the completion queue inside
/// the completion group, and every block released once the operation finished.
final class BlockLifetimeTests: ServerTestCase {
    /// An object that keeps its operation, whose blocks capture the object: a retain cycle that
    /// only releasing the blocks at the finish breaks.
    private final class Owner: Sendable {
        let operation: HTTPRequestOperation
        init(operation: HTTPRequestOperation) { self.operation = operation }
        func touch() { _ = operation.request }
    }

    /// `HTTPRequestOperation.response` is an `HTTPURLResponse?`, so AFN's `operation.response.statusCode`
    /// ports as `operation.response?.statusCode`; the base class sees the same object.
    func testResponseIsAnHTTPURLResponse() {
        let (operation, outcome) = run(request("/status/201"))
        XCTAssertTrue(outcome.isSuccess)
        let response: HTTPURLResponse? = operation.response
        XCTAssertEqual(operation.response?.statusCode, 201)
        XCTAssertEqual(response?.value(forHTTPHeaderField: "Content-Type"), "application/json")
        let base: URLConnectionOperation = operation
        XCTAssertTrue(base.response === operation.response)
    }

    func testCompletionBlockRunsOnTheCompletionQueueInsideTheGroupAfterFinishing() {
        let queue = DispatchQueue(label: "test.completion")
        let group = DispatchGroup()
        let operation = HTTPRequestOperation(request: request("/echo"))
        operation.completionQueue = queue
        operation.completionGroup = group
        let ran = expectation(description: "completion block")
        operation.completionBlock = { [unowned operation] in
            dispatchPrecondition(condition: .onQueue(queue))
            XCTAssertTrue(operation.isFinished, "it runs after the operation turned finished")
            // Inside the group: the group cannot be empty while the block runs.
            XCTAssertEqual(group.wait(timeout: .now()), .timedOut, "it runs inside the completion group")
            ran.fulfill()
        }
        let notified = expectation(description: "group notified after the block")
        OperationQueue().addOperation(operation)
        wait(for: [ran], timeout: 5)
        group.notify(queue: .global()) { notified.fulfill() }
        wait(for: [notified], timeout: 5)
        XCTAssertNil(operation.completionBlock, "released once it ran")
    }

    func testCompletionBlockRunsOnTheLibraryCallbackQueueByDefault() {
        let operation = HTTPRequestOperation(request: request("/echo"))
        let ran = expectation(description: "completion block")
        let first = expectation(description: "success block")
        let order = Recorder<String>()
        operation.setCompletionBlockWithSuccess({ _, _ in order.append("success"); first.fulfill() }, failure: nil)
        operation.completionBlock = {
            order.append("completion")
            ran.fulfill()
        }
        operation.start()
        wait(for: [first, ran], timeout: 5, enforceOrder: true)
        XCTAssertEqual(order.all, ["success", "completion"], "serially, on the one callback queue")
    }

    /// A weak reference the polling check may read from another thread; written once, before.
    private final class WeakReference: @unchecked Sendable {   // written before it is shared, then only read
        weak var object: AnyObject?
    }

    func testEveryBlockIsReleasedWhenTheOperationFinishes() {
        // A cache of the test's own, in memory, so that the cache block is asked (the process's
        // shared cache stores nothing) and no disk archive leaks under AddressSanitizer.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onet-cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cache = URLCache(memoryCapacity: 4 << 20, diskCapacity: 0, diskPath: directory.path)
        let weakOwner = WeakReference()
        let finished = expectation(description: "finished")
        do {
            let owner = Owner(operation: HTTPRequestOperation(request: request("/bytes/2000")))
            weakOwner.object = owner
            let operation = owner.operation
            operation.urlCache = cache
            operation.setCompletionBlockWithSuccess({ _, _ in owner.touch() }, failure: { _, _ in owner.touch() })
            operation.setDownloadProgressBlock { _, _, _ in owner.touch() }
            operation.setUploadProgressBlock { _, _, _ in owner.touch() }
            operation.setRedirectResponseBlock { _, request, _ in owner.touch(); return request }
            operation.setWillSendRequestForAuthenticationChallengeBlock { _, _ in
                owner.touch()
                return (.performDefaultHandling, nil)
            }
            operation.setCacheResponseBlock { _, cached in owner.touch(); return cached }
            operation.completionBlock = { owner.touch() }
            // Observed by the notification, which holds no block of the operation.
            let token = NotificationCenter.default.addObserver(forName: .operationDidFinish, object: operation, queue: nil) { _ in
                finished.fulfill()
            }
            OperationQueue().addOperation(operation)
            wait(for: [finished], timeout: 5)
            NotificationCenter.default.removeObserver(token)
        }
        // The blocks are dropped at the finish; the last closures holding them (the handler hop, the
        // completion block) are released once they ran on their queues, which nothing signals.
        XCTAssertTrue(eventually { weakOwner.object == nil }, "the cycle owner → operation → block → owner was broken at the finish")
    }
}
