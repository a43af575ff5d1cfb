import Foundation

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
