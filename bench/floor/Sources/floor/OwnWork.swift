import CFloorCurl
import Foundation

/// `--own-work UNITS`: synthetic work standing in for a library's own per-request cost beyond the
/// contract, so that a number of instructions can be priced in throughput on this machine. The issue's
/// budget (and onet's measured own cost) is a count of instructions; whether a count fits a throughput
/// goal depends on what the instructions are, so a unit is made of the same kinds of work onet's own
/// cost is made of (bench/README.md, round 15), in about its shares: plain code (a scan with compares
/// and branches), the Swift runtime (references kept and dropped, objects made and freed), glibc (the
/// allocator, an uncontended lock). Its instructions a unit, and their shares, are measured with
/// callgrind (bench/README.md, round 17), not assumed.
///
/// Each request spends a third of the units where onet spends its own work on an operation-queue worker
/// (`start()`), a third on the loop thread as its transfer ends, and the rest on the delivery queue before
/// the status check.
enum OwnWork {
    /// The object a unit makes and frees; `value` is written so that the object is not optimised away.
    final class Box {
        var value: Int
        init(_ value: Int) { self.value = value }
    }

    /// One call the optimiser does not inline: a read and a write through the reference, and a scan of
    /// a header-like line (the plain code a library runs: loads, compares, branches).
    @inline(never)
    static func touch(_ box: Box, _ step: Int, _ line: UnsafeBufferPointer<UInt8>) -> Int {
        var hash = box.value &+ step
        for byte in line {
            if byte == UInt8(ascii: ":") { hash &+= 7 } else { hash = hash &* 31 &+ Int(byte) }
        }
        box.value = hash
        return hash
    }

    /// Keeps `value` observable, so that the loop computing it is not removed.
    @_optimize(none)
    static func keep(_ value: Int) {}

    /// What `touch` scans.
    static let line = Array("Accept-Ranges: bytes".utf8)

    /// Spends `units` units of work under `lock` (the caller's own: uncontended, as a library's
    /// per-operation lock is). A unit keeps a reference and later drops it, makes one call, takes the
    /// lock once and scans a line; every fourth unit makes a new object, which is freed four units on.
    static func spend(_ units: Int, lock: NSLock) {
        guard units > 0 else { return }
        var kept: [Box] = []
        kept.reserveCapacity(8)
        var box = Box(0)
        var total = 0
        line.withUnsafeBufferPointer { line in
            for step in 0..<units {
                if step & 3 == 3 { box = Box(step) }
                kept.append(box)
                total &+= touch(box, step, line)
                lock.lock()
                total &+= kept.count
                lock.unlock()
                if kept.count == 8 { kept.removeAll(keepingCapacity: true) }
            }
        }
        keep(total)
    }

    /// `--own-footprint FUNCTIONS`: calls `count` of footprint.c's distinct functions, from `first`, so
    /// that each place runs code of its own; with `paged`, functions that each lie on a page of their own.
    static func touchFootprint(first: Int, count: Int, paged: Bool) {
        guard count > 0 else { return }
        let seed = UInt64(truncatingIfNeeded: first)
        keep(Int(truncatingIfNeeded: paged ? floor_footprint_paged(first, count, seed)
                                           : floor_footprint(first, count, seed)))
    }

    /// `--own-data LINES`: reads `lines` lines of footprint.c's data region (and writes every fourth).
    static func touchData(lines: Int) {
        guard lines > 0 else { return }
        keep(Int(truncatingIfNeeded: floor_data_touch(lines, UInt64(truncatingIfNeeded: lines))))
    }

    /// A per-request amount shared among the three places (0 `start()`, 1 the loop thread, 2 the
    /// delivery queue): a third each, the rest to the delivery.
    struct Split: Sendable {
        let total: Int
        /// The part spent at `place`.
        func at(_ place: Int) -> Int { place < 2 ? total / 3 : total - 2 * (total / 3) }
        /// The parts spent at the places before `place` (where `place`'s own functions start).
        func before(_ place: Int) -> Int { (0..<place).reduce(0) { $0 + at($1) } }
    }
}
