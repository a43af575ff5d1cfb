import Dispatch
import Foundation
@testable import OperationNetworking
import XCTest

/// Migration.md's map spells out the types where a naive reading of AFN's header goes wrong; the
/// compiler checks each against the declaration (every constant below has the documented type),
/// and the named default queue is where handlers run.
final class DocumentedSignatureTests: ServerTestCase {
    func testTheExactTypesOfMigrationMdCompile() {
        typealias Connection = URLConnectionOperation
        typealias Progress = (@Sendable (Int, Int64, Int64) -> Void)?
        let batch: ([Connection], (@Sendable (Int, Int) -> Void)?, (@Sendable ([Connection]) -> Void)?) -> [Operation]
            = Connection.batch(of:progress:completion:)
        let upload: (Connection) -> (Progress) -> Void = Connection.setUploadProgressBlock
        let download: (Connection) -> (Progress) -> Void = Connection.setDownloadProgressBlock
        let handlers: (HTTPRequestOperation) -> ((@Sendable (HTTPRequestOperation, Any?) -> Void)?,
                                                 (@Sendable (HTTPRequestOperation, Error) -> Void)?) -> Void
            = HTTPRequestOperation.setCompletionBlockWithSuccess(_:failure:)
        let get: (HTTPRequestOperationManager) -> (String, Any?, (@Sendable (HTTPRequestOperation, Any?) -> Void)?,
                                                   (@Sendable (HTTPRequestOperation?, Error) -> Void)?) -> HTTPRequestOperation?
            = HTTPRequestOperationManager.GET(_:parameters:success:failure:)
        let head: (HTTPRequestOperationManager) -> (String, Any?, (@Sendable (HTTPRequestOperation) -> Void)?,
                                                    (@Sendable (HTTPRequestOperation?, Error) -> Void)?) -> HTTPRequestOperation?
            = HTTPRequestOperationManager.HEAD(_:parameters:success:failure:)
        let redirect: (Connection) -> ((@Sendable (Connection, URLRequest, URLResponse?) -> URLRequest?)?) -> Void
            = Connection.setRedirectResponseBlock
        let cache: (Connection) -> ((@Sendable (Connection, CachedURLResponse) -> CachedURLResponse?)?) -> Void
            = Connection.setCacheResponseBlock
        let challenge: (Connection) -> ((@Sendable (Connection, URLAuthenticationChallenge)
            -> (Connection.AuthChallengeDisposition, URLCredential?))?) -> Void
            = Connection.setWillSendRequestForAuthenticationChallengeBlock
        let query: (HTTPRequestSerializer) -> ((@Sendable (URLRequest, Any) throws -> String)?) -> Void
            = HTTPRequestSerializer.setQueryStringSerialization
        let reachability: (NetworkReachabilityManager) -> ((@Sendable (NetworkReachabilityStatus) -> Void)?) -> Void
            = NetworkReachabilityManager.setReachabilityStatusChange
        let trust: (SecurityPolicy) -> ([Data], String?) -> Bool = SecurityPolicy.evaluateServerTrust(_:forDomain:)
        let throttle: (any MultipartFormData, Int, TimeInterval) -> Void = { $0.throttleBandwidth(withPacketSize: $1, delay: $2) }
        let stream: (any MultipartFormData, InputStream?, Int64) -> Void = {
            $0.appendPart(with: $1, name: "n", fileName: "f", length: $2, mimeType: "m")
        }
        let contentTypes: ReferenceWritableKeyPath<HTTPResponseSerializer, Set<String>?> = \.acceptableContentTypes
        let methodsInURI: ReferenceWritableKeyPath<HTTPRequestSerializer, Set<String>> = \.httpMethodsEncodingParametersInURI
        let pinned: ReferenceWritableKeyPath<SecurityPolicy, Set<Data>> = \.pinnedCertificates
        let userInfo: ReferenceWritableKeyPath<Connection, [String: Any]> = \.userInfo
        let requestEncoding: ReferenceWritableKeyPath<HTTPRequestSerializer, String.Encoding> = \.stringEncoding
        let responseEncoding: KeyPath<Connection, String.Encoding> = \.responseStringEncoding
        let responseObject: KeyPath<HTTPRequestOperation, Any?> = \.responseObject
        let packetSize: Int = UploadStream3GSuggestedPacketSize
        let pinningMode: UInt = SSLPinningMode.certificate.rawValue
        let status: Int = NetworkReachabilityStatus.reachableViaWiFi.rawValue
        let queue: DispatchQueue = Connection.defaultCompletionQueue
        let checked: [Any] = [batch, upload, download, handlers, get, head, redirect, cache, challenge, query, reachability,
                              trust, throttle, stream, contentTypes, methodsInURI, pinned, userInfo, requestEncoding,
                              responseEncoding, responseObject, packetSize, pinningMode, status, queue]
        XCTAssertEqual(checked.count, 25)
    }

    /// `defaultCompletionQueue` names the queue handlers run on when `completionQueue` is `nil`.
    func testHandlersWithoutACompletionQueueRunOnTheDefaultCompletionQueue() {
        XCTAssertTrue(URLConnectionOperation.defaultCompletionQueue === CallbackQueues.callback)
        XCTAssertEqual(URLConnectionOperation.defaultCompletionQueue.label, "org.operationnetworking.callback")
        let operation = HTTPRequestOperation(request: request("/echo"))
        let queues = Recorder<Bool>()
        let done = expectation(description: "success")
        operation.setDownloadProgressBlock { _, _, _ in queues.append(CallbackQueues.isOnCallbackQueue) }
        operation.setCompletionBlockWithSuccess({ _, _ in
            queues.append(CallbackQueues.isOnCallbackQueue)
            done.fulfill()
        }, failure: nil)
        operation.start()
        wait(for: [done], timeout: 10)
        XCTAssertFalse(queues.all.isEmpty)
        XCTAssertEqual(Set(queues.all), [true], "progress and success ran on the default completion queue")
    }
}
