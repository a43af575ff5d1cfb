import Dispatch
import Foundation

/// Carries progress from the network thread to a queue without a hop per data chunk.
///
/// The network thread adds each chunk under a lock; only when no delivery is already scheduled
/// does it schedule one. A delivery reports everything gathered since the last one, so a fast
/// transfer costs a handful of hops, and the totals a block sees are always current.
/// The block is read when a delivery runs, not when the reporter is made, so a block replaced or
/// removed while the transfer runs takes effect from the next delivery.
/// - Threading: `record` on the network thread, delivery on `queue`; the pending numbers are
///   guarded by `lock`, which is why the class may be `@unchecked Sendable`.
final class ProgressReporter: @unchecked Sendable {
    /// `(bytes since the last call, total bytes, expected total or -1)`.
    typealias Block = @Sendable (Int, Int64, Int64) -> Void

    /// Reads the operation's current block (under the operation's lock, never under `lock`).
    private let currentBlock: @Sendable () -> Block?
    private let queue: DispatchQueue
    private let lock = NSLock()
    /// Bytes gathered since the last delivery; guarded by `lock`.
    private var pendingBytes = 0
    /// Latest totals; guarded by `lock`.
    private var total: Int64 = 0
    private var expected: Int64 = -1
    /// Whether a delivery is already on `queue`; guarded by `lock`.
    private var scheduled = false

    init(queue: DispatchQueue, currentBlock: @escaping @Sendable () -> Block?) {
        self.currentBlock = currentBlock
        self.queue = queue
    }

    /// Adds a chunk; cheap enough for the network thread.
    func record(bytes: Int, total: Int64, expected: Int64) {
        let schedule: Bool = lock.withLock {
            pendingBytes += bytes
            self.total = total
            self.expected = expected
            if scheduled { return false }
            scheduled = true
            return true
        }
        if schedule {
            queue.async { [self] in deliver() }
        }
    }

    private func deliver() {
        let (bytes, total, expected) = lock.withLock {
            defer { pendingBytes = 0; scheduled = false }
            return (pendingBytes, self.total, self.expected)
        }
        currentBlock()?(bytes, total, expected)
    }
}
