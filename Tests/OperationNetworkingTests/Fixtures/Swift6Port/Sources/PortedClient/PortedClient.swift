// Ported from an AFNetworking 2.x app without changes but the Swift spelling: blocks capture `self`
// (a class that is not Sendable), a local `var` and the app's own (not @Sendable) callback type.
// Every one of those is a warning in the Swift 6 language mode, none an error.
import Foundation
import OperationNetworking

/// The app's completion type, from an Objective-C block typedef: not `@Sendable`.
typealias LoadCompletion = (Bool) -> Void

/// A view model as AFN apps wrote them: a plain class whose blocks capture it.
final class FeedViewModel {
    var items: [String] = []
    var events = 0
    let manager = SigningManager(baseURL: URL(string: "https://example.invalid/api/"))

    func reload(completion: @escaping LoadCompletion) {
        var attempts = 0
        manager.GET("feed", parameters: ["page": 1], success: { _, responseObject in
            attempts += 1
            self.items = responseObject as? [String] ?? []
            completion(true)
        }, failure: { _, _ in
            attempts += 1
            self.items.removeAll()
            completion(false)
        })
        manager.HEAD("feed", parameters: nil, success: { _ in self.events += 1 }, failure: nil)
        guard let url = URL(string: "https://example.invalid/api/more") else { return }
        let operation = HTTPRequestOperation(request: URLRequest(url: url))
        operation.setCompletionBlockWithSuccess({ _, responseObject in
            attempts += 1
            self.items.append(contentsOf: responseObject as? [String] ?? [])
            completion(true)
        }, failure: { _, _ in
            self.events += 1
            completion(false)
        })
        operation.setDownloadProgressBlock { _, totalBytesRead, _ in self.events = Int(totalBytesRead) }
        operation.setRedirectResponseBlock { _, request, _ in
            self.events += 1
            return request
        }
        operation.setWillSendRequestForAuthenticationChallengeBlock { _, _ in
            self.events += 1
            return (.performDefaultHandling, nil)
        }
        let batch = URLConnectionOperation.batch(of: [operation], progress: { finished, _ in attempts = finished },
                                                 completion: { _ in completion(attempts > 0) })
        manager.operationQueue.addOperations(batch, waitUntilFinished: false)
    }
}

/// A manager subclass overriding the hooks with the block types AFN's headers spelled (no `@Sendable`).
final class SigningManager: HTTPRequestOperationManager, @unchecked Sendable {
    override func httpRequestOperation(withHTTPMethod method: String, URLString: String, parameters: Any?,
                                       success: ((HTTPRequestOperation, Any?) -> Void)?,
                                       failure: ((HTTPRequestOperation?, Error) -> Void)?) -> HTTPRequestOperation? {
        var signed = parameters as? [String: Any] ?? [:]
        signed["signature"] = "\(method) \(URLString)"
        return super.httpRequestOperation(withHTTPMethod: method, URLString: URLString, parameters: signed,
                                          success: success, failure: failure)
    }
}

/// AFN apps' "remembering" security policy: compiles from another module exactly as `SecurityPolicy`'s
/// documentation writes it, with the `Protected` of Migration.md's "Porting to Swift 6" (the build adds
/// Migration.md's compiled blocks to this target).
final class RememberingPolicy: SecurityPolicy, @unchecked Sendable {
    private let approved = Protected<Set<Data>>([])

    func approve(_ certificate: Data) { approved.withLock { _ = $0.insert(certificate) } }

    override func evaluateServerTrust(_ chain: [Data], forDomain domain: String?) -> Bool {
        if super.evaluateServerTrust(chain, forDomain: domain) { return true }
        guard let leaf = chain.first else { return false }
        return approved.withLock { $0.contains(leaf) }
    }
}
