import Foundation

/// How deeply parameters nest, measured without recursion.
///
/// Every encoder the library uses recurses once per level: `QueryString`'s flattening, and
/// Foundation's `JSONSerialization` and `PropertyListSerialization`. Parameters a hundred thousand
/// levels deep overflow the stack in any of them, which ends the process rather than throwing. So
/// each entry point walks the parameters first, with an explicit stack, and refuses them before any
/// recursive encoder sees them.
/// - Threading: pure functions.
enum ParameterNesting {
    /// Throws `RequestSerializationErrorCode.nestingTooDeep` (with `url` as the failing URL) when
    /// `parameters` nest arrays, dictionaries and sets more than
    /// `HTTPRequestSerializer.maximumParameterNestingDepth` levels deep. The top-level container is
    /// level 1; a scalar is level 0.
    static func validate(_ parameters: Any, url: URL?) throws {
        let limit = HTTPRequestSerializer.maximumParameterNestingDepth
        guard let top = children(of: parameters) else { return }
        // One iterator per open container: `stack.count` is the depth of the innermost one.
        var stack = [top.makeIterator()]
        while !stack.isEmpty {
            guard let child = stack[stack.count - 1].next() else {
                stack.removeLast()
                continue
            }
            guard let grandchildren = children(of: child) else { continue }
            guard stack.count < limit else { throw LibraryError.nestingTooDeep(limit: limit, url: url) }
            stack.append(grandchildren.makeIterator())
        }
    }

    /// The values inside `value` when it is a container, else `nil`.
    ///
    /// The same casts `QueryString` descends through, and through which `NSArray`, `NSDictionary` and
    /// `NSSet` bridge (all that JSON and property lists can nest): so every level any encoder recurses
    /// into is counted here. Dictionary keys count too: a key is rendered as text, and the text of a
    /// deeply nested key would recurse as well.
    private static func children(of value: Any) -> [Any]? {
        if let dictionary = value as? [String: Any] { return Array(dictionary.values) }
        if let dictionary = value as? [AnyHashable: Any] {
            return dictionary.flatMap { [$0.key.base, $0.value] }
        }
        if let array = value as? [Any] { return array }
        if let set = value as? Set<AnyHashable> { return set.map(\.base) }
        return nil
    }
}
