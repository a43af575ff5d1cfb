import Foundation

/// Number-typed keys read with a type check. `NSCoder`'s `decodeInteger`, `decodeBool`, … answer 0 or
/// `false` for a value that is not a number, so an archive whose pinning mode was replaced by a string
/// would decode as "no pinning". Under `SafeArchive`, these fail the decoding instead
/// (`ArchiveErrorCode.invalidValue`); other coders get the plain decoders' values as before.
extension NSCoder {
    /// The integer under `key` of an object of class `owner` (the class that writes the key); `nil`
    /// when absent or not a number.
    func decodeCheckedInteger(forKey key: String, of owner: AnyClass) -> Int? {
        holdsNumber(forKey: key, of: owner) ? decodeInteger(forKey: key) : nil
    }

    /// The 64-bit integer under `key`; see `decodeCheckedInteger(forKey:of:)`.
    func decodeCheckedInt64(forKey key: String, of owner: AnyClass) -> Int64? {
        holdsNumber(forKey: key, of: owner) ? decodeInt64(forKey: key) : nil
    }

    /// The double under `key`; see `decodeCheckedInteger(forKey:of:)`.
    func decodeCheckedDouble(forKey key: String, of owner: AnyClass) -> Double? {
        holdsNumber(forKey: key, of: owner) ? decodeDouble(forKey: key) : nil
    }

    /// The boolean under `key`; see `decodeCheckedInteger(forKey:of:)`.
    func decodeCheckedBool(forKey key: String, of owner: AnyClass) -> Bool? {
        holdsNumber(forKey: key, of: owner) ? decodeBool(forKey: key) : nil
    }

    /// Reads the archive's `version` with the type check. Every version is readable (missing keys keep
    /// their defaults), but a version that is not a number means the archive was tampered with.
    func checkCodingVersion(of owner: AnyClass) {
        _ = decodeCheckedInteger(forKey: CodingVersionKey, of: owner)
    }

    /// Whether `key` is present and, as far as the running `SafeArchive` check knows, a number;
    /// a present non-number is recorded as an invalid value.
    private func holdsNumber(forKey key: String, of owner: AnyClass) -> Bool {
        guard containsValue(forKey: key) else { return false }
        if ArchiveCheck.current?.holdsNonNumber(forKey: key, in: owner) == true {
            failInvalidValue(forKey: key, expected: "number")
            return false
        }
        return true
    }
}
