import ArgumentParser
import Dispatch
import Foundation
import OperationNetworking

/// `onet archive`: restores archives written by another process (the cross-process archive tests and
/// the demo use it).
struct Archive: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore an archived manager or a paused download in this process.",
        discussion: """
        Examples:
          onet archive inspect-manager manager.archive --path status/200
          onet archive resume-download paused.archive --output file.bin
        """,
        subcommands: [InspectManager.self, ResumeDownload.self])

    /// Prints a restored manager's settings as JSON, then the status of one GET through it.
    struct InspectManager: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "inspect-manager",
                                                        abstract: "Restore a manager, print its settings, GET a path.",
                                                        discussion: "Example:\n  onet archive inspect-manager manager.archive --path echo")
        @Argument(help: "The archive file.") var file: String
        @Option(help: "Path to GET through the restored manager.") var path: String = "echo"

        func run() throws {
            let manager = try SafeArchive.unarchive(HTTPRequestOperationManager.self,
                                                    from: Data(contentsOf: URL(fileURLWithPath: file)))
            var report = ManagerReport(manager)
            let done = DispatchSemaphore(value: 0)
            let status = Locked(0)
            manager.GET(path, parameters: nil, success: { operation, _ in
                status.set(operation.response?.statusCode ?? 0)
                done.signal()
            }, failure: { operation, error in
                status.set(operation?.response?.statusCode ?? -(error as NSError).code)
                done.signal()
            })
            _ = done.wait(timeout: .now() + 10)
            // The handler ran; let the operation finish (its blocks released) before the process exits.
            manager.operationQueue.waitUntilAllOperationsAreFinished()
            report.status = status.value
            let data = try JSONEncoder().encode(report)
            print(String(decoding: data, as: UTF8.self))
        }
    }

    /// Continues a paused download archived by another process, appending to the output file.
    struct ResumeDownload: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume-download",
                                                        abstract: "Restore a paused download and resume it into a file.",
                                                        discussion: "Example:\n  onet archive resume-download paused.archive --output file.bin")
        @Argument(help: "The archive file.") var file: String
        @Option(help: "The file the download appends to.") var output: String

        func run() throws {
            let operation = try SafeArchive.unarchive(HTTPRequestOperation.self, from: Data(contentsOf: URL(fileURLWithPath: file)))
            operation.outputStream = OutputStream(toFileAtPath: output, append: true)
            let done = DispatchSemaphore(value: 0)
            let result = Locked(0)
            operation.setCompletionBlockWithSuccess({ operation, _ in
                result.set(operation.response?.statusCode ?? 0)
                done.signal()
            }, failure: { _, error in
                print("failed: \(error.localizedDescription)")
                result.set(-1)
                done.signal()
            })
            operation.resume()
            guard done.wait(timeout: .now() + 30) == .success, result.value > 0 else { throw ExitCode.failure }
            operation.waitUntilFinished()   // the output stream is closed when the operation finishes
            print("status=\(result.value)")
        }
    }
}

/// The settings of a restored manager, as the cross-process test compares them.
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
    var status = 0

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
    }
}
