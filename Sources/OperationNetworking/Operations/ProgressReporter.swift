import Dispatch
import Foundation

/// Carries progress from the network thread to a queue without a hop per data chunk.
///
/// The network thread adds each chunk under a lock; only when no delivery is already scheduled
/// does it schedule one. A delivery reports everything gathered since the last one, so a fast
/// transfer costs a handful of hops, and the totals a block sees are always current.
/// The block is read when a delivery runs, not when the reporter is made, so a block replaced or
/// removed while the transfer runs takes effect from the next delivery.
/// - Threading: `record` on the network thread, delivery on `queue`; the pending numbers live behind
///   the reporter's own lock, which is never held while the block runs.
final class ProgressReporter: Sendable {
    /// `(bytes since the last call, total bytes, expected total or -1)`.
    typealias Block = @Sendable (Int, Int64, Int64) -> Void

    /// What the network thread gathered for the next delivery.
    private struct Pending {
        /// Bytes gathered since the last delivery.
        var bytes = 0
        /// Latest totals.
        var total: Int64 = 0
        var expected: Int64 = -1
        /// Whether a delivery is already on `queue`.
        var scheduled = false
    }

    /// Reads the operation's current block (under the operation's lock, never under `pending`'s).
    private let currentBlock: @Sendable () -> Block?
    private let queue: DispatchQueue
    private let pending = Protected(Pending())

    init(queue: DispatchQueue, currentBlock: @escaping @Sendable () -> Block?) {
        self.currentBlock = currentBlock
        self.queue = queue
    }

    /// Adds a chunk; cheap enough for the network thread.
    func record(bytes: Int, total: Int64, expected: Int64) {
        let schedule: Bool = pending.withLock {
            $0.bytes += bytes
            $0.total = total
            $0.expected = expected
            if $0.scheduled { return false }
            $0.scheduled = true
            return true
        }
        if schedule {
            queue.async { [self] in deliver() }
        }
    }

    private func deliver() {
        let delivered: Pending = pending.withLock {
            let gathered = $0
            $0.bytes = 0
            $0.scheduled = false
            return gathered
        }
        currentBlock()?(delivered.bytes, delivered.total, delivered.expected)
    }
}
