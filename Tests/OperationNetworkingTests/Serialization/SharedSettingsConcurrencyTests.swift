import Dispatch
import Foundation
import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// A policy subclass whose overrides read the policy's own settings, as AFN apps' subclasses did (at
/// the top level: archives name its class).
final class SettingsReadingPolicy: SecurityPolicy, @unchecked Sendable {
    override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        (copy as? SecurityPolicy)?.validatesDomainName = validatesDomainName
        return copy
    }

    override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool {
        _ = pinnedCertificates
        return super.evaluateServerTrust(chain, forDomain: domain)
    }
}

/// A response serializer subclass whose overrides read its own settings.
final class SettingsReadingSerializer: JSONResponseSerializer, @unchecked Sendable {
    override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        (copy as? JSONResponseSerializer)?.stringEncoding = stringEncoding
        return copy
    }

    override func responseObject(for response: URLResponse?, data: Data?) throws -> Any? {
        _ = (acceptableStatusCodes, acceptableContentTypes, readingOptions)
        return try super.responseObject(for: response, data: data)
    }
}

/// One manager's serializers and security policy serve every operation it makes while other threads
/// read, write, copy and archive their settings: nothing deadlocks, every request completes, and
/// every read sees a value some write left (run it under ThreadSanitizer to see no race either).
final class SharedSettingsConcurrencyTests: ServerTestCase {
    func testSettingsChangedFromManyThreadsWhileOperationsUseThem() throws {
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        let requestSerializer = JSONRequestSerializer()
        let responseSerializer = SettingsReadingSerializer()
        let policy = SettingsReadingPolicy(pinningMode: .none)
        manager.requestSerializer = requestSerializer
        manager.responseSerializer = responseSerializer
        manager.securityPolicy = policy

        // The settings threads run until every request was handled (at least 100 rounds each, and
        // never past the deadline, so a hung request fails the test instead of spinning them forever).
        let deadline = Date().addingTimeInterval(60)
        let requests = DispatchGroup()
        let count = 40
        for _ in 0..<count { requests.enter() }
        // Threads of their own: spinning on the global queues would starve the operation queue.
        let hammering = DispatchGroup()
        for worker in 0..<2 {
            hammering.enter()
            Thread {
                defer { hammering.leave() }
                var round = 0
                while Date() < deadline && (round < 100 || requests.wait(timeout: .now()) == .timedOut) {
                    SharedSettingsConcurrencyTests.hammer(requestSerializer, responseSerializer, policy,
                                                          round: worker * 1_000_000 + round)
                    round += 1
                }
            }.start()
        }

        // The handlers run on the main queue: the test waits through XCTest, which keeps it running.
        let handled = expectation(description: "every request's handler")
        handled.expectedFulfillmentCount = count
        for index in 0..<count {
            let operation = manager.GET("/status/200?body=%7B%22n%22:\(index)%7D", parameters: nil, success: { _, object in
                XCTAssertEqual((object as? [String: Any])?["n"] as? Int, index)
                requests.leave()
                handled.fulfill()
            }, failure: { _, error in
                XCTFail("request \(index): \(error)")
                requests.leave()
                handled.fulfill()
            })
            XCTAssertNotNil(operation)
        }
        wait(for: [handled], timeout: 60)
        XCTAssertLessThan(Date(), deadline, "the requests and settings threads ran past the deadline")
        XCTAssertEqual(hammering.wait(timeout: .now() + 60), .success, "the settings threads never finished")
    }

    /// `isEqual` read the settings of both sides under two lock acquisitions, so a policy compared with
    /// itself while another thread changed a setting could be unequal to itself.
    func testAPolicyIsEqualToItselfWhileItsSettingsChange() {
        let policy = SecurityPolicy(pinningMode: .none)
        let writing = DispatchGroup()
        writing.enter()
        let deadline = Date().addingTimeInterval(30)
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { writing.leave() }
            var round = 0
            while done.wait(timeout: .now()) == .timedOut && Date() < deadline {
                policy.validatesDomainName = round % 2 == 0
                round += 1
            }
        }.start()
        var unequal = 0
        for _ in 0..<200_000 where !policy.isEqual(policy) { unequal += 1 }
        done.signal()
        XCTAssertEqual(writing.wait(timeout: .now() + 30), .success, "the writing thread never finished")
        XCTAssertEqual(unequal, 0, "the policy was unequal to itself \(unequal) times")
    }

    /// One round of reads, writes, copies and archives; every value written keeps requests succeeding.
    private static func hammer(_ request: JSONRequestSerializer, _ response: SettingsReadingSerializer,
                               _ policy: SettingsReadingPolicy, round: Int) {
        let even = round % 2 == 0
        request.setValue("\(round)", forHTTPHeaderField: "X-Round")
        request.timeoutInterval = even ? 30 : 20
        request.writingOptions = even ? [] : [.sortedKeys]
        request.httpMethodsEncodingParametersInURI = ["GET", "HEAD", "DELETE"]
        XCTAssertNotNil(request.value(forHTTPHeaderField: "X-Round"))
        XCTAssertTrue([30.0, 20.0, 60.0].contains(request.timeoutInterval))

        response.acceptableStatusCodes = IndexSet(integersIn: 200..<(even ? 300 : 400))
        response.readingOptions = even ? [] : [.fragmentsAllowed]
        response.removesKeysWithNullValues = even
        response.stringEncoding = .utf8
        XCTAssertEqual(response.acceptableStatusCodes?.first, 200)

        policy.validatesDomainName = even
        policy.allowInvalidCertificates = false
        policy.additionalTrustAnchors = []
        XCTAssertEqual(policy.sslPinningMode, .none)

        if round % 10 == 0 {
            XCTAssertTrue(request.copy() is JSONRequestSerializer)
            XCTAssertTrue(response.copy() is SettingsReadingSerializer)
            XCTAssertTrue(policy.copy() is SettingsReadingPolicy)
            _ = policy.hash
            XCTAssertTrue(policy.isEqual(policy))
            for object in [request, response, policy] as [NSObject] {
                XCTAssertNoThrow(try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true))
            }
        }
    }
}
