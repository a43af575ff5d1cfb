import Foundation

/// `Content-Range: bytes first-last/total` (the total may be `*`, unknown).
struct ContentRange: Equatable {
    let first: Int64
    let last: Int64
    let total: Int64?

    /// `nil` when `value` is missing or not a satisfied byte range.
    init?(_ value: String?) {
        guard let value, let unit = value.range(of: "bytes ", options: [.caseInsensitive, .anchored]) else { return nil }
        let rest = value[unit.upperBound...].trimmingCharacters(in: .whitespaces)
        let halves = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2, bounds.count == 2,
              let first = Int64(bounds[0].trimmingCharacters(in: .whitespaces)),
              let last = Int64(bounds[1].trimmingCharacters(in: .whitespaces)), first >= 0, last >= first else { return nil }
        let totalText = halves[1].trimmingCharacters(in: .whitespaces)
        if totalText == "*" {
            total = nil
        } else {
            guard let total = Int64(totalText), total > last else { return nil }
            self.total = total
        }
        self.first = first
        self.last = last
    }
}

/// The caller's own `Range` header, as far as a continuation needs it.
enum CallerRange: Equatable {
    /// `bytes=start-` or `bytes=start-end`.
    case bytes(start: Int64, end: Int64?)
    /// Any other form (several ranges, a suffix range, another unit).
    case unusable

    /// Parses a `Range` header value.
    init(header: String) {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else {
            self = .unusable
            return
        }
        let parts = value.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let start = Int64(parts[0].trimmingCharacters(in: .whitespaces)), start >= 0 else {
            self = .unusable
            return
        }
        let endText = parts[1].trimmingCharacters(in: .whitespaces)
        if endText.isEmpty {
            self = .bytes(start: start, end: nil)
        } else if let end = Int64(endText), end >= start {
            self = .bytes(start: start, end: end)
        } else {
            self = .unusable
        }
    }
}
