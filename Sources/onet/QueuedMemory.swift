import Dispatch
import Foundation
import CCurlShim
import OperationNetworking
#if canImport(Glibc)
import Glibc
#endif

/// `onet bench --enqueue-all`: what a queued operation costs. Every request is made at once through a
/// manager's `GET` onto its suspended queue (as an app that queues a backlog does), then the queue
/// runs them C at a time. Prints resident memory before, with everything queued, at the peak, after
/// the queue drained, after 2.5 s idle (the library gives freed memory back by then) and after a
/// `malloc_trim` of its own for comparison, then the RESULT line.
enum QueuedMemory {
    /// Resident bytes now (`/proc/self/statm`).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }

    /// Peak resident bytes so far (`VmHWM` in `/proc/self/status`).
    static func peakResidentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return 0 }
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Runs the measurement; returns (finished, errors, bytes, wall seconds).
    static func run(url: String, requests: Int, concurrency: Int) -> (Int, Int, Int64, Double) {
        let manager = HTTPRequestOperationManager(baseURL: nil)
        manager.responseSerializer = HTTPResponseSerializer()
        manager.operationQueue.maxConcurrentOperationCount = concurrency
        manager.operationQueue.isSuspended = true
        let done = DispatchSemaphore(value: 0)
        let counts = Tally()
        let baseline = residentBytes()
        for _ in 0..<requests {
            manager.GET(url, parameters: nil, success: { operation, _ in
                if counts.record(bytes: Int64(operation.responseData?.count ?? 0), failed: false) == requests { done.signal() }
            }, failure: { operation, error in
                if counts.record(bytes: 0, failed: true, reason: Bench.reason(error, of: operation)) == requests { done.signal() }
            })
        }
        let queued = residentBytes()
        let start = DispatchTime.now()
        manager.operationQueue.isSuspended = false
        done.wait()
        let wall = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        manager.operationQueue.waitUntilAllOperationsAreFinished()
        let drained = residentBytes()
        // The library gives freed memory back once its network thread has been idle for a second.
        Thread.sleep(forTimeInterval: 2.5)
        let idle = residentBytes()
        malloc_trim(0)
        let trimmed = residentBytes()
        let mib = { (bytes: Int) in String(format: "%.1f", Double(bytes) / 1_048_576) }
        print("# memory baseline_mib=\(mib(baseline)) queued_mib=\(mib(queued)) peak_mib=\(mib(peakResidentBytes())) "
              + "drained_mib=\(mib(drained)) idle_mib=\(mib(idle)) trimmed_mib=\(mib(trimmed)) "
              + "bytes_per_queued_operation=\((queued - baseline) / max(requests, 1))")
        let (finished, errors, bytes) = counts.snapshot
        counts.reportReasons(of: finished)
        return (finished, errors, bytes, wall)
    }
}
