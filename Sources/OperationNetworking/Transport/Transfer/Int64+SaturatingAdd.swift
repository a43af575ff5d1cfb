extension Int64 {
    /// `self + other`, stuck at `Int64.max` instead of trapping: byte counts and offsets come from
    /// servers and archives, and an absurd one must not stop the process.
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other < 0 ? .min : .max) : sum
    }
}
