import Foundation

/// A value shared between a callback (the network thread, a completion queue) and the thread that
/// reads it, reachable only through the lock that owns it (hence `@unchecked Sendable`).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    /// A box holding `value`.
    init(_ value: Value) { stored = value }

    /// The current value.
    var value: Value { lock.withLock { stored } }

    /// Replaces the value.
    func set(_ value: Value) { lock.withLock { stored = value } }

    /// Changes the value in place and returns what `body` returns, all under the lock.
    @discardableResult
    func update<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result { try lock.withLock { try body(&stored) } }
}
