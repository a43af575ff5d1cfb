import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Output stream and notifications

extension URLConnectionOperation {
    /// How the transfer about to start for `request` ends without the network because the caller's
    /// output stream (`stream`, still to open) would not open. `nil`: it goes to the network.
    func streamOutcome(for request: URLRequest, opening stream: OutputStream?) -> TransferOutcome? {
        guard let stream else { return nil }
        if stream.streamStatus == .notOpen { stream.open() }
        guard stream.streamStatus != .error else {
            return .failed(stream.streamError ?? TransportError.make(.cannotWriteToFile, "The output stream could not be opened.",
                                                                     url: request.url))
        }
        return nil
    }

    /// Posts from the library's callback queue: at once when already on it, else asynchronously.
    func post(_ name: Notification.Name) {
        if CallbackQueues.isOnCallbackQueue {
            NotificationCenter.default.post(name: name, object: self)
            return
        }
        CallbackWork.shared.async(group: nil) { [self] in
            NotificationCenter.default.post(name: name, object: self)
        }
    }
}
