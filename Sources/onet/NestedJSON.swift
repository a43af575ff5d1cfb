import Foundation

/// httpie's nested JSON syntax for the names of data items: `user[name]=ada` builds
/// `{"user": {"name": "ada"}}`, `tags[]=a` appends to an array, `list[2]=x` sets an index (filling
/// the gap with `null`), `[]=x` makes the whole body an array, and `\[` keeps a bracket literal.
enum NestedJSON {
    /// A name that does not parse, or an access that does not fit what an earlier item built; the
    /// message names the item's key.
    struct Failure: Error, CustomStringConvertible {
        /// What is wrong, in httpie's words.
        let message: String
        var description: String { message }
    }

    /// One step of a name: a key of an object, an index of an array, or an append to one.
    enum Step: Equatable {
        case key(String)
        case index(Int)
        case append

        /// The step as it is written (`name` at the root, `[name]`, `[2]`, `[]` after it).
        func written(atRoot: Bool) -> String {
            switch self {
            case .key(let name): return atRoot ? name : "[\(name)]"
            case .index(let index): return "[\(index)]"
            case .append: return "[]"
            }
        }

        var action: String {
            switch self {
            case .key: return "key"
            case .index: return "index"
            case .append: return "append"
            }
        }
    }

    private enum Token: Equatable {
        case text(String)
        case number(Int)
        case open
        case close
    }

    /// Builds the body from `(name, value)` pairs in order; `nil` when there are none.
    static func build(_ pairs: [(String, JSONValue)]) throws -> JSONValue? {
        var context: JSONValue?
        for (name, value) in pairs {
            let steps = try parse(name)
            try assign(value, at: steps[...], into: &context, key: name, walked: [])
        }
        return context
    }

    /// The steps of a name.
    static func parse(_ name: String) throws -> [Step] {
        let tokens = tokenize(name)
        var steps: [Step] = []
        var position = 0
        func next(_ expected: String) throws -> Token {
            guard position < tokens.count else {
                throw Failure(message: "HTTPie Syntax Error: Expecting \(expected): \(name)")
            }
            defer { position += 1 }
            return tokens[position]
        }
        // The root: a name, `[n]` or `[]`; nothing at all is the empty name.
        if tokens.isEmpty { return [.key("")] }
        switch try next("a text, a number or '['") {
        case .text(let text): steps.append(.key(text))
        case .number(let number): steps.append(.key(String(number)))
        case .open:
            switch try next("a number or ']'") {
            case .number(let index):
                guard case .close = try next("']'") else { throw Failure(message: "HTTPie Syntax Error: Expecting ']': \(name)") }
                steps.append(.index(index))
            case .close: steps.append(.append)
            default: throw Failure(message: "HTTPie Syntax Error: Expecting a number or ']': \(name)")
            }
        case .close: throw Failure(message: "HTTPie Syntax Error: Expecting a text, a number or '[': \(name)")
        }
        while position < tokens.count {
            guard case .open = try next("'['") else { throw Failure(message: "HTTPie Syntax Error: Expecting '[': \(name)") }
            switch try next("a text, a number or ']'") {
            case .close: steps.append(.append)
            case .text(let text):
                guard case .close = try next("']'") else { throw Failure(message: "HTTPie Syntax Error: Expecting ']': \(name)") }
                steps.append(.key(text))
            case .number(let index):
                guard case .close = try next("']'") else { throw Failure(message: "HTTPie Syntax Error: Expecting ']': \(name)") }
                steps.append(.index(index))
            case .open: throw Failure(message: "HTTPie Syntax Error: Expecting a text, a number or ']': \(name)")
            }
        }
        return steps
    }

    /// Brackets are operators; a backslash before `[`, `]` or `\` makes it literal (and the text then
    /// never reads as a number); `\5` is the text "5".
    private static func tokenize(_ source: String) -> [Token] {
        var tokens: [Token] = []
        var buffer = ""
        var escaped = false
        func flush() {
            guard !buffer.isEmpty else { return }
            if !escaped, let number = integer(buffer) {
                tokens.append(.number(number))
            } else if !escaped, buffer.hasPrefix("\\"), integer(String(buffer.dropFirst())) != nil {
                tokens.append(.text(String(buffer.dropFirst())))
            } else {
                tokens.append(.text(buffer))
            }
            buffer = ""
            escaped = false
        }
        var characters = Array(source)[...]
        while let character = characters.popFirst() {
            switch character {
            case "[", "]":
                flush()
                tokens.append(character == "[" ? .open : .close)
            case "\\" where !characters.isEmpty:
                let following = characters.removeFirst()
                if "[]\\".contains(following) { escaped = true } else { buffer.append("\\") }
                buffer.append(following)
            default:
                buffer.append(character)
            }
        }
        flush()
        return tokens
    }

    /// An integer as Python's `int()` reads a plain one: optional sign, ASCII digits.
    private static func integer(_ text: String) -> Int? {
        let digits = text.first == "-" || text.first == "+" ? text.dropFirst() : text[...]
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    /// Puts `value` at `steps` inside `container`, making objects and arrays on the way.
    private static func assign(_ value: JSONValue, at steps: ArraySlice<Step>, into container: inout JSONValue?,
                               key: String, walked: [Step]) throws {
        guard let step = steps.first else {
            container = value
            return
        }
        let rest = steps.dropFirst()
        if container == nil || container == .null { container = emptyContainer(for: step) }
        switch (step, container) {
        case (.key(let name), .object(var members)?):
            var child: JSONValue? = members.last(where: { $0.name == name })?.value
            try assign(value, at: rest, into: &child, key: key, walked: walked + [step])
            if let index = members.firstIndex(where: { $0.name == name }) {
                members[index].value = child ?? .null
            } else {
                members.append(JSONValue.Member(name: name, value: child ?? .null))
            }
            container = .object(members)
        case (.index(let index), .array(var elements)?):
            guard index >= 0 else { throw Failure(message: "HTTPie Value Error: Negative indexes are not supported: \(key)") }
            if elements.count <= index { elements += Array(repeating: .null, count: index + 1 - elements.count) }
            var child: JSONValue? = rest.isEmpty ? nil : elements[index]
            try assign(value, at: rest, into: &child, key: key, walked: walked + [step])
            elements[index] = child ?? .null
            container = .array(elements)
        case (.append, .array(var elements)?):
            var child: JSONValue?
            try assign(value, at: rest, into: &child, key: key, walked: walked + [step])
            elements.append(child ?? .null)
            container = .array(elements)
        default:
            let path = walked.enumerated().map { $0.element.written(atRoot: $0.offset == 0) }.joined()
            var required = "array"
            if case .key = step { required = "object" }
            throw Failure(message: "HTTPie Type Error: Can't perform '\(step.action)' based access on '\(path)' which has a type "
                          + "of '\(container?.typeName ?? "NoneType")' but this operation requires a type of '\(required)': \(key)")
        }
    }

    private static func emptyContainer(for step: Step) -> JSONValue {
        if case .key = step { return .object([]) }
        return .array([])
    }
}
