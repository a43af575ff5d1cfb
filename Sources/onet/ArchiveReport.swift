import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import OperationNetworking

/// The settings of a restored manager: what `onet archive inspect-manager` shows (the cross-process
/// archive tests compare them).
struct ManagerReport: Codable {
    var baseURL: String?
    var requestSerializer: String
    var headers: [String: String]
    var timeoutInterval: Double
    var cachePolicy: UInt
    var methodsInURI: [String]
    var responseSerializer: String
    var components: [String]
    var acceptableContentTypes: [String]
    var acceptableStatusCodes: [Int]
    var removesKeysWithNullValues: Bool
    var pinningMode: UInt
    var pinnedCertificates: Int
    var allowInvalidCertificates: Bool
    var validatesDomainName: Bool
    var shouldUseCredentialStorage: Bool
    var hasCredential: Bool
    var queuedOperations: Int
    var retryAttempts: Int
    var proxy: String
    /// The status of the `--path` GET, when one was made.
    var status: Int?

    init(_ manager: HTTPRequestOperationManager) {
        let request = manager.requestSerializer
        let response = manager.responseSerializer
        let json = (response as? CompoundResponseSerializer)?.responseSerializers.first as? JSONResponseSerializer
            ?? response as? JSONResponseSerializer
        baseURL = manager.baseURL?.absoluteString
        requestSerializer = String(describing: type(of: request))
        headers = request.httpRequestHeaders.filter { $0.key != "User-Agent" && $0.key != "Accept-Language" }
        timeoutInterval = request.timeoutInterval
        cachePolicy = request.cachePolicy.rawValue
        methodsInURI = request.httpMethodsEncodingParametersInURI.sorted()
        responseSerializer = String(describing: type(of: response))
        components = (response as? CompoundResponseSerializer)?.responseSerializers.map { String(describing: type(of: $0)) } ?? []
        acceptableContentTypes = (json?.acceptableContentTypes ?? []).sorted()
        acceptableStatusCodes = Array(json?.acceptableStatusCodes ?? IndexSet())
        removesKeysWithNullValues = json?.removesKeysWithNullValues ?? false
        pinningMode = manager.securityPolicy.sslPinningMode.rawValue
        pinnedCertificates = manager.securityPolicy.pinnedCertificates.count
        allowInvalidCertificates = manager.securityPolicy.allowInvalidCertificates
        validatesDomainName = manager.securityPolicy.validatesDomainName
        shouldUseCredentialStorage = manager.shouldUseCredentialStorage
        hasCredential = manager.credential != nil
        queuedOperations = manager.operationQueue.operationCount
        retryAttempts = manager.retryPolicy.maxAttempts
        proxy = manager.proxy.description
    }

    /// `setting: value` lines, sorted by setting; header secrets shown as their scheme and `***`.
    var lines: [String] {
        let pinning = ["none", "public key", "certificate"]
        let headerText = headers.sorted { $0.key < $1.key }.map { name, value in
            let secret = ExchangePrinter.secretHeaders.contains(name.lowercased())
            return "\(name)=" + (secret ? (value.split(separator: " ").first.map { "\($0) ***" } ?? "***") : value)
        }.joined(separator: ", ")
        var fields: [String: String] = [
            "baseURL": baseURL ?? "(none)", "requestSerializer": requestSerializer, "headers": headerText,
            "timeoutInterval": String(format: "%g s", timeoutInterval), "cachePolicy": String(cachePolicy),
            "methodsInURI": methodsInURI.joined(separator: ", "), "responseSerializer": responseSerializer,
            "components": components.joined(separator: ", "), "acceptableContentTypes": acceptableContentTypes.joined(separator: ", "),
            "acceptableStatusCodes": ManagerReport.ranges(acceptableStatusCodes),
            "removesKeysWithNullValues": String(removesKeysWithNullValues),
            "pinningMode": pinning[min(Int(pinningMode), pinning.count - 1)], "pinnedCertificates": String(pinnedCertificates),
            "allowInvalidCertificates": String(allowInvalidCertificates), "validatesDomainName": String(validatesDomainName),
            "shouldUseCredentialStorage": String(shouldUseCredentialStorage), "hasCredential": String(hasCredential),
            "queuedOperations": String(queuedOperations), "retryAttempts": String(retryAttempts), "proxy": proxy,
        ]
        if let status { fields["status"] = String(status) }
        return fields.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.isEmpty ? "(none)" : $0.value)" }
    }

    /// `200-299, 304`: runs of consecutive codes as ranges.
    static func ranges(_ codes: [Int]) -> String {
        var runs: [ClosedRange<Int>] = []
        for code in codes.sorted() {
            if let last = runs.last, last.upperBound + 1 == code {
                runs[runs.count - 1] = last.lowerBound...code
            } else {
                runs.append(code...code)
            }
        }
        return runs.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ", ")
    }

    /// The status of one GET of `path` through `manager`; a transport failure is an `ArchiveFailure`.
    static func status(of path: String, through manager: HTTPRequestOperationManager) throws -> Int {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<(status: Int, error: String?)>((0, nil))
        manager.GET(path, parameters: nil, success: { operation, _ in
            outcome.set((operation.response?.statusCode ?? 0, nil))
            done.signal()
        }, failure: { operation, error in
            let status = operation?.response?.statusCode ?? 0
            outcome.set((status, status == 0 ? ResponsePrinter.describe(error as NSError) : nil))
            done.signal()
        })
        guard done.wait(timeout: .now() + 60) == .success else { throw ArchiveFailure("GET \(path): no answer within 60 s") }
        // The handler ran; let the operation finish (its blocks released) before the process exits.
        manager.operationQueue.waitUntilAllOperationsAreFinished()
        if let error = outcome.value.error { throw ArchiveFailure("GET \(path): \(error)") }
        return outcome.value.status
    }
}
