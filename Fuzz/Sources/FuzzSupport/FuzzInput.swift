/// Reads typed values off a fuzzer's input, front to back. Running out of bytes is not an error:
/// every read then returns zeros or empty values, so any input — even an empty one — is a complete
/// program for a target to interpret.
public struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    public init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    }

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public var isAtEnd: Bool { position >= bytes.count }
    /// Everything not read yet.
    public var remaining: [UInt8] { Array(bytes[min(position, bytes.count)...]) }

    public mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    public mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    public mutating func uint32() -> UInt32 { UInt32(uint16()) | UInt32(uint16()) << 16 }

    public mutating func uint64() -> UInt64 { UInt64(uint32()) | UInt64(uint32()) << 32 }

    /// Up to `limit` bytes: a length byte, then that many bytes (fewer at the end of the input).
    public mutating func bytes(limit: Int = 64) -> [UInt8] {
        let count = min(Int(byte()), limit)
        let end = min(position + count, bytes.count)
        guard position < end else { return [] }
        defer { position = end }
        return Array(bytes[position..<end])
    }

    /// A string of up to `limit` bytes, invalid UTF-8 repaired (Swift strings are always valid).
    public mutating func string(limit: Int = 64) -> String {
        String(decoding: bytes(limit: limit), as: UTF8.self)
    }
}
