import Dispatch
import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// Where a finished transfer is handled: its end comes through the delivery queue and its response is
/// serialized on the processing queue, whatever the completion queue and whether or not monitors
/// watch — never on a completion queue (not even the library's own callback queue), nor on the serial
/// delivery queue every transfer's end goes through — and a pause reaches its operation even while the
/// callback queue is busy archiving it.
final class DeliveryRouteTests: ServerTestCase {
    /// Names the library's queues for the serializer below to read.
    static let queueName: DispatchSpecificKey<String> = {
        let key = DispatchSpecificKey<String>()
        CallbackQueues.callback.setSpecific(key: key, value: "org.operationnetworking.callback")
        CallbackQueues.delivery.setSpecific(key: key, value: "org.operationnetworking.delivery")
        CallbackQueues.processing.setSpecific(key: key, value: "org.operationnetworking.processing")
        return key
    }()

    /// Notes the queue the library serializes the response on.
    private final class QueueRecordingSerializer: HTTPResponseSerializer, @unchecked Sendable {   // label guarded by recordLock
        private let recordLock = NSLock()
        private var label: String?   // guarded by recordLock

        var queueLabel: String? { recordLock.withLock { label } }

        override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
            let current = DispatchQueue.getSpecific(key: DeliveryRouteTests.queueName)
            recordLock.withLock { label = current }
            return try super.responseObject(for: response, data: data)
        }
    }

    private func serializationQueue(completionQueue: DispatchQueue?, monitors: [EventMonitor] = []) -> String? {
        _ = DeliveryRouteTests.queueName
        let operation = HTTPRequestOperation(request: request("/bytes/1000"))
        let serializer = QueueRecordingSerializer()
        operation.responseSerializer = serializer
        operation.completionQueue = completionQueue
        operation.eventMonitors = monitors
        let done = expectation(description: "handlers ran")
        operation.setCompletionBlockWithSuccess({ _, _ in done.fulfill() }, failure: { _, error in
            XCTFail("\(error)")
            done.fulfill()
        })
        OperationQueue().addOperation(operation)
        wait(for: [done], timeout: 10)
        return serializer.queueLabel
    }

    func testAnOperationOnTheDefaultQueueIsNotSerializedOnItsCompletionQueue() {
        XCTAssertEqual(serializationQueue(completionQueue: nil), "org.operationnetworking.processing")
    }

    func testAnOperationWithItsOwnCompletionQueueIsSerializedOnTheProcessingQueue() {
        let own = DispatchQueue(label: "test.own-completion")
        XCTAssertEqual(serializationQueue(completionQueue: own), "org.operationnetworking.processing")
    }

    func testAnOperationWithMonitorsIsSerializedOnTheProcessingQueue() {
        let monitor = RecordingMonitor()
        XCTAssertEqual(serializationQueue(completionQueue: nil, monitors: [monitor]), "org.operationnetworking.processing")
    }

    /// Archiving an executing operation pauses it and waits for the pause to settle. Done from the
    /// callback queue, that wait would hold the very queue a pause handled there needs, and archiving
    /// would give up after its 2 s limit with the bytes not yet accounted for.
    func testArchivingFromTheCallbackQueuePausesWithoutWaitingOutTheLimit() throws {
        let operation = HTTPRequestOperation(request: request("/bytes/400000?chunkSize=4000&chunkDelayMs=5"))
        startAndAwaitBytes(operation)

        let archived = expectation(description: "archived on the callback queue")
        nonisolated(unsafe) var archive: Data?
        nonisolated(unsafe) var seconds = 0.0
        CallbackQueues.callback.async {
            let start = Date()
            archive = try? SafeArchive.archive(operation)
            seconds = Date().timeIntervalSince(start)
            archived.fulfill()
        }
        wait(for: [archived], timeout: 10)
        XCTAssertLessThan(seconds, 1.5, "archiving waited out its limit: the pause was queued behind it")
        let restored = try SafeArchive.unarchive(HTTPRequestOperation.self, from: try XCTUnwrap(archive))
        XCTAssertTrue(restored.isPaused)
        let kept = try XCTUnwrap(restored.keptDownloadForTesting, "the restored operation keeps the paused bytes")
        XCTAssertGreaterThanOrEqual(kept.bytes.count, 20_000, "the bytes received before the pause")
        operation.cancel()
    }
}
