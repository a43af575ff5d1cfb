import NIOCore
import Foundation

/// The deterministic body served by `/bytes`, `/chunked`, `/drop` and `/stall`: byte `i` of the
/// resource is `UInt8(i % 251)`. 251 is prime, so a misplaced range or a lost chunk shows up as a
/// wrong value rather than happening to repeat at a power-of-two boundary.
enum BytePattern {
    /// The period of the pattern.
    static let period = 251

    /// The bytes at absolute offsets `range` of the resource.
    static func buffer(_ range: Range<Int>, allocator: ByteBufferAllocator) -> ByteBuffer {
        let count = range.count
        var buffer = allocator.buffer(capacity: count)
        guard count > 0 else { return buffer }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            guard let base = raw.baseAddress else { return 0 }
            // Write one period by hand, then double the filled prefix with memcpy: bodies of tens
            // of MB are generated on the event loop, and a per-byte loop is slow in debug builds.
            var value = range.lowerBound % period
            let prefix = Swift.min(count, period)
            for index in 0..<prefix {
                raw[index] = UInt8(value)
                value = value + 1 == period ? 0 : value + 1
            }
            // `filled` stays a multiple of the period, so each copy continues the sequence.
            var filled = prefix
            while filled < count {
                let chunk = Swift.min(filled, count - filled)
                (base + filled).copyMemory(from: base, byteCount: chunk)
                filled += chunk
            }
            return count
        }
        return buffer
    }
}

/// The outcome of interpreting a `Range` request header against a resource of known length.
enum ByteRangeRequest: Equatable {
    /// Absent, malformed or multi-range: RFC 9110 lets a server ignore it and send the full body.
    case ignore
    /// A single satisfiable range, clamped to the resource.
    case satisfiable(ClosedRange<Int>)
    /// Syntactically valid but outside the resource: answer 416.
    case unsatisfiable

    /// Interprets `bytes=a-`, `bytes=a-b` and `bytes=-k` for a resource of `length` bytes.
    init(header: String?, length: Int) {
        guard let header else {
            self = .ignore
            return
        }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), !trimmed.contains(",") else {
            self = .ignore
            return
        }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else {
            self = .ignore
            return
        }
        let startText = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let endText = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)

        if startText.isEmpty {
            // Suffix range: the last k bytes.
            guard let suffix = Int(endText), suffix >= 0 else {
                self = .ignore
                return
            }
            guard suffix > 0, length > 0 else {
                self = .unsatisfiable
                return
            }
            self = .satisfiable(Swift.max(0, length - suffix)...(length - 1))
            return
        }
        guard let start = Int(startText), start >= 0 else {
            self = .ignore
            return
        }
        var end = length - 1
        if !endText.isEmpty {
            guard let parsedEnd = Int(endText), parsedEnd >= start else {
                self = .ignore
                return
            }
            end = Swift.min(parsedEnd, length - 1)
        }
        guard start < length else {
            self = .unsatisfiable
            return
        }
        self = .satisfiable(start...end)
    }
}
