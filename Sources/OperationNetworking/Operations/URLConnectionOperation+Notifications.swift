import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Output stream and notifications

extension URLConnectionOperation {
    /// How the transfer about to start ends without the network: from the cache, or because the
    /// caller's output stream would not open. `nil`: it goes to the network. `stream` is the one the
    /// transfer writes to, taken with it under the lock: without one, the lock is not taken again.
    func localOutcome(writingTo stream: OutputStream?) -> TransferOutcome? {
        if let cached = cachedOutcome() { return cached }
        if stream != nil, let failure = openOutputStream() { return .failed(failure) }
        return nil
    }

    /// Opens a caller's output stream once; returns the error if it cannot be opened.
    func openOutputStream() -> Error? {
        let stream: OutputStream? = lock.withLock {
            guard let stream = mutable.outputStream, !mutable.outputStreamOpened else { return nil }
            mutable.outputStreamOpened = true
            return stream
        }
        guard let stream else { return nil }
        if stream.streamStatus == .notOpen { stream.open() }
        guard stream.streamStatus != .error else {
            return stream.streamError ?? TransportError.make(.cannotWriteToFile, "The output stream could not be opened.",
                                                             url: request.url)
        }
        return nil
    }

    /// Posts from the library's callback queue: at once when already on it, else asynchronously.
    /// `queue` is the queue the caller runs on, when it knows: the callback queue itself is recognised
    /// without `DispatchQueue.getSpecific` (about 200 instructions, once per request).
    func post(_ name: Notification.Name, runningOn queue: DispatchQueue? = nil) {
        if queue === CallbackQueues.callback || CallbackQueues.isOnCallbackQueue {
            NotificationCenter.default.post(name: name, object: self)
            return
        }
        CallbackQueues.callback.async { [self] in
            NotificationCenter.default.post(name: name, object: self)
        }
    }
}
