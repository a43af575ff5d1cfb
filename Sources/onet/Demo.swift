import ArgumentParser
import Dispatch
import Foundation
import OperationNetworking
import OperationNetworkingTestServer

/// `onet demo`: the library's operation model, end to end, against an embedded loopback server.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start a loopback server and show dependencies, a batch, queue control and pause/resume.",
        discussion: """
        Needs no network: the server is embedded and listens on 127.0.0.1 only. Exits non-zero if a step failed.

        Examples:
          onet demo
          onet          (demo is the default subcommand)
        """)

    func run() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let console = Console()
        console.say("OperationNetworking demo — loopback server at \(server.baseURL.absoluteString)")
        console.say("Network: \(currentReachability())")
        let failures = [
            dependentOperations(server, console),
            batchWithProgress(server, console),
            queueControl(server, console),
            pauseAndResume(server, console),
            archiveRoundTrip(server, console),
        ].filter { !$0 }.count
        console.say(failures == 0 ? "\nAll demo steps succeeded." : "\n\(failures) demo step(s) failed.")
        if failures > 0 { throw ExitCode.failure }
    }

    /// A → B → C: each starts only after the previous one's success block returned.
    private func dependentOperations(_ server: TestServer, _ console: Console) -> Bool {
        console.say("\n1. Dependent operations (token → profile → feed)")
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        let done = DispatchSemaphore(value: 0)
        let steps = ["token", "profile", "feed"]
        var operations: [HTTPRequestOperation] = []
        for step in steps {
            guard let request = try? manager.requestSerializer.request(
                method: "GET", urlString: server.url("/echo").absoluteString, parameters: ["step": step]) else {
                return false
            }
            let operation = manager.httpRequestOperation(with: request, success: { operation, _ in
                let millis = Int((operation.metrics?.total ?? 0) * 1000)
                console.say("   \(step) finished (\(operation.response?.statusCode ?? 0), \(millis) ms)")
                if step == "feed" { done.signal() }
            }, failure: { _, error in
                console.say("   \(step) failed: \(error.localizedDescription)")
                done.signal()
            })
            if let previous = operations.last { operation.addDependency(previous) }
            operations.append(operation)
        }
        manager.operationQueue.addOperations(operations.reversed(), waitUntilFinished: false)
        guard done.wait(timeout: .now() + 10) == .success else { return false }
        let order = server.requests.compactMap { $0.query["step"] }
        console.say("   server saw: \(order.joined(separator: " → "))")
        return order == steps
    }

    /// Five downloads as one batch: progress once per member, completion after all handlers.
    private func batchWithProgress(_ server: TestServer, _ console: Console) -> Bool {
        console.say("\n2. A batch of five downloads with progress")
        let members = (1...5).map { HTTPRequestOperation(request: URLRequest(url: server.url("/bytes/\($0 * 100_000)"))) }
        let done = DispatchSemaphore(value: 0)
        let batch = URLConnectionOperation.batch(of: members, progress: { finished, total in
            console.say("   progress \(finished)/\(total)")
        }, completion: { operations in
            let bytes = operations.reduce(0) { $0 + ($1.responseData?.count ?? 0) }
            console.say("   batch complete: \(operations.count) operations, \(bytes) bytes")
            done.signal()
        })
        OperationQueue().addOperations(batch, waitUntilFinished: false)
        return done.wait(timeout: .now() + 10) == .success
    }

    /// Suspend holds requests back; resume releases them; cancelAllOperations fails them all as cancelled.
    private func queueControl(_ server: TestServer, _ console: Console) -> Bool {
        console.say("\n3. Suspending, resuming and cancelling the queue")
        server.clearLog()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 2
        queue.isSuspended = true
        let finished = DispatchGroup()
        for index in 0..<4 {
            let operation = HTTPRequestOperation(request: URLRequest(url: server.url("/echo?i=\(index)")))
            finished.enter()
            operation.setCompletionBlockWithSuccess({ _, _ in finished.leave() }, failure: { _, _ in finished.leave() })
            queue.addOperation(operation)
        }
        Thread.sleep(forTimeInterval: 0.2)
        console.say("   suspended: \(queue.operationCount) queued, server received \(server.requests.count)")
        queue.isSuspended = false
        guard finished.wait(timeout: .now() + 10) == .success else { return false }
        console.say("   resumed: server received \(server.requests.count)")

        let cancelled = Locked(0)
        let slow = DispatchGroup()
        for _ in 0..<4 {
            let operation = HTTPRequestOperation(request: URLRequest(url: server.url("/delay/5000")))
            slow.enter()
            operation.setCompletionBlockWithSuccess({ _, _ in slow.leave() }, failure: { _, error in
                if (error as? URLError)?.code == .cancelled { cancelled.update { $0 += 1 } }
                slow.leave()
            })
            queue.addOperation(operation)
        }
        Thread.sleep(forTimeInterval: 0.1)
        let started = Date()
        queue.cancelAllOperations()
        guard slow.wait(timeout: .now() + 5) == .success else { return false }
        let millis = Int(Date().timeIntervalSince(started) * 1000)
        console.say("   cancelAllOperations: \(cancelled.value) of 4 cancelled within \(millis) ms")
        return server.requests.count >= 4 && cancelled.value == 4
    }

    /// A slow 2 MB download paused part way and resumed with a Range request.
    private func pauseAndResume(_ server: TestServer, _ console: Console) -> Bool {
        console.say("\n4. Pausing and resuming a download")
        server.clearLog()
        let size = 2_000_000
        let operation = HTTPRequestOperation(request: URLRequest(url: server.url("/bytes/\(size)?chunkSize=16384&chunkDelayMs=4")))
        let halfway = DispatchSemaphore(value: 0)
        let signalled = Locked(false)
        operation.setDownloadProgressBlock { _, total, _ in
            // Checked and set in one step: only the first callback past a third signals.
            if total >= Int64(size / 3), signalled.update({ sent in
                let first = !sent
                sent = true
                return first
            }) {
                halfway.signal()
            }
        }
        let done = DispatchSemaphore(value: 0)
        operation.setCompletionBlockWithSuccess({ _, _ in done.signal() }, failure: { _, error in
            console.say("   failed: \(error.localizedDescription)")
            done.signal()
        })
        operation.start()
        guard halfway.wait(timeout: .now() + 10) == .success else { return false }
        operation.pause()
        console.say("   paused: isPaused=\(operation.isPaused)")
        Thread.sleep(forTimeInterval: 0.3)
        operation.resume()
        guard done.wait(timeout: .now() + 20) == .success else { return false }
        let range = server.requests.last?.header("Range") ?? "none"
        let intact = operation.responseData == Data((0..<size).map { UInt8($0 % 251) })
        console.say("   resumed with Range: \(range); status \(operation.response?.statusCode ?? 0); "
                    + "\(operation.responseData?.count ?? 0) bytes, identical to the source: \(intact)")
        return intact && range.hasPrefix("bytes=")
    }
}

extension Demo {
    /// The reachability status right now, as the shared manager's first report gives it.
    func currentReachability() -> String {
        let manager = NetworkReachabilityManager.shared
        let first = DispatchSemaphore(value: 0)
        manager.setReachabilityStatusChange { _ in first.signal() }
        manager.startMonitoring()
        _ = first.wait(timeout: .now() + 2)
        manager.stopMonitoring()
        manager.setReachabilityStatusChange(nil)
        return manager.localizedNetworkReachabilityStatusString
    }

    /// A configured manager archived, restored (as another process would) and used.
    func archiveRoundTrip(_ server: TestServer, _ console: Console) -> Bool {
        console.say("\n5. Archiving and restoring a configured manager")
        let manager = HTTPRequestOperationManager(baseURL: server.baseURL)
        manager.requestSerializer.setValue("demo", forHTTPHeaderField: "X-Client")
        manager.requestSerializer.timeoutInterval = 15
        let json = JSONResponseSerializer()
        json.removesKeysWithNullValues = true
        manager.responseSerializer = json
        manager.credential = URLCredential(user: "demo", password: "never-archived", persistence: .none)
        guard let archive = try? SafeArchive.archive(manager),
              let restored = try? SafeArchive.unarchive(HTTPRequestOperationManager.self, from: archive) else { return false }
        let leaked = archive.range(of: Data("never-archived".utf8)) != nil
        console.say("   archive: \(archive.count) bytes; password in it: \(leaked); restored timeout \(restored.requestSerializer.timeoutInterval) s, "
                    + "header X-Client=\(restored.requestSerializer.value(forHTTPHeaderField: "X-Client") ?? "-")")
        let done = DispatchSemaphore(value: 0)
        let status = Locked(0)
        server.clearLog()
        restored.GET("echo", parameters: nil, success: { _, _ in
            status.update { $0 += 1 }
            done.signal()
        }, failure: { _, _ in done.signal() })
        guard done.wait(timeout: .now() + 10) == .success else { return false }
        let sent = server.requests.first?.header("X-Client") ?? "-"
        console.say("   the restored manager's GET succeeded: \(status.value == 1); server saw X-Client=\(sent)")
        return !leaked && status.value == 1 && sent == "demo"
    }
}

/// Prints lines from any thread without interleaving (the lock serializes the writes; there is no state).
final class Console: Sendable {
    private let lock = NSLock()

    func say(_ line: String) {
        lock.withLock { try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8)) }
    }
}
