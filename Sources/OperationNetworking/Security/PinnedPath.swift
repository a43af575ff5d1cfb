import Foundation

/// The pin check when `allowInvalidCertificates` relaxes chain validity: validity (dates, issuer
/// trust, extensions) is not asked for, but the pin must still sign for the leaf. A certificate the
/// server merely appends never counts.
enum PinnedPath {
    /// Presented certificates walked at most: a longer chain is not a server's.
    static let maximumLength = 16

    /// Whether, walking up from the leaf while each certificate's signature verifies with the next
    /// presented certificate's key, a certificate on the walk `isPinned`, or the last one is signed by
    /// a pinned certificate's key (a pinned CA the server does not send).
    static func signaturesReachPin(_ chain: [Data], pinned: Set<Data>, isPinned: (Data) -> Bool) -> Bool {
        guard var current = chain.first, !pinned.isEmpty else { return false }
        var rest = chain.dropFirst().prefix(maximumLength - 1)
        while true {
            if isPinned(current) { return true }
            if pinned.contains(where: { CertificateData.isSigned(current, by: $0) }) { return true }
            guard let next = rest.first, CertificateData.isSigned(current, by: next) else { return false }
            current = next
            rest = rest.dropFirst()
        }
    }
}
