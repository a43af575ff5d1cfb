import ArgumentParser
import Foundation

/// One request item word, split as httpie splits it: at its earliest separator (the longest one when
/// several start there), a backslash making the next `:`, `;`, `=` or `@` part of the name.
struct RequestItem {
    /// What the separator makes of the item.
    enum Kind: String, CaseIterable {
        /// `Header:value`; `Header:` alone removes a default header.
        case header = ":"
        /// `Header;`: the header with an empty value.
        case emptyHeader = ";"
        /// `Header:@file`: the value from a file.
        case headerFile = ":@"
        /// `name==value`: a query parameter.
        case query = "=="
        /// `name==@file`: a query parameter from a file.
        case queryFile = "==@"
        /// `name=value`: a string field.
        case field = "="
        /// `name=@file`: a string field holding a text file.
        case fieldFile = "=@"
        /// `name:=json`: a raw JSON field.
        case json = ":="
        /// `name:=@file`: a JSON field read from a file.
        case jsonFile = ":=@"
        /// `name@file`: a file part of a multipart form (`@file` alone: the body).
        case file = "@"

        /// Whether the item puts data in the body (it makes the default method POST).
        var isData: Bool { [.field, .fieldFile, .json, .jsonFile, .file].contains(self) }
        /// Whether the item is a field of a JSON body (httpie's nested-JSON group).
        var isJSONField: Bool { [.field, .fieldFile, .json, .jsonFile].contains(self) }
    }

    /// The name (before the separator), escapes resolved.
    let key: String
    /// The value (after the separator).
    let value: String
    /// The separator.
    let kind: Kind
    /// The word as given, for messages.
    let original: String

    /// The characters a backslash can escape: those of the separators.
    private static let special: Set<Character> = [":", ";", "=", "@"]

    /// Splits `word`; `nil` when it holds no separator.
    static func parse(_ word: String) -> RequestItem? {
        // Tokens: runs of text, and escaped characters (which are never separators).
        var tokens: [(text: String, escaped: Bool)] = [("", false)]
        var characters = Array(word)[...]
        while let character = characters.popFirst() {
            if character == "\\" {
                let next = characters.popFirst()
                if let next, special.contains(next) {
                    tokens.append((String(next), true))
                    tokens.append(("", false))
                } else {
                    tokens[tokens.count - 1].text += "\\" + (next.map(String.init) ?? "")
                }
            } else {
                tokens[tokens.count - 1].text.append(character)
            }
        }
        for (index, token) in tokens.enumerated() where !token.escaped {
            var best: (kind: Kind, range: Range<String.Index>)?
            for kind in Kind.allCases {
                guard let range = token.text.range(of: kind.rawValue) else { continue }
                if let current = best, current.range.lowerBound < range.lowerBound
                    || (current.range.lowerBound == range.lowerBound && current.kind.rawValue.count >= kind.rawValue.count) {
                    continue
                }
                best = (kind, range)
            }
            guard let (kind, range) = best else { continue }
            let key = tokens[..<index].map(\.text).joined() + token.text[..<range.lowerBound]
            let value = String(token.text[range.upperBound...]) + tokens[(index + 1)...].map(\.text).joined()
            return RequestItem(key: key, value: value, kind: kind, original: word)
        }
        return nil
    }
}

/// A part of a multipart body, in the order the items gave them.
enum MultipartField {
    /// A text field.
    case text(name: String, value: String)
    /// A file, streamed from `path`; `mimeType` `nil` when none is known.
    case file(name: String, fileName: String, path: String, mimeType: String?)

    /// The field's name.
    var name: String {
        switch self {
        case .text(let name, _), .file(let name, _, _, _): return name
        }
    }
}

/// Request headers as httpie collects them: in order, a name may repeat, a `nil` value removes the
/// default header of that name (names compare case-insensitively).
struct HeaderFields {
    /// The fields in order.
    private(set) var fields: [(name: String, value: String?)] = []

    /// Adds a field: `nil` replaces every value of the name with the removal; a value replaces an
    /// earlier removal.
    mutating func add(_ name: String, _ value: String?) {
        let lowered = name.lowercased()
        if value == nil {
            fields.removeAll { $0.name.lowercased() == lowered }
        } else {
            fields.removeAll { $0.name.lowercased() == lowered && $0.value == nil }
        }
        fields.append((name, value))
    }

    /// Replaces every field of `name` with one (a default or a session's header overridden).
    mutating func set(_ name: String, _ value: String?) {
        let lowered = name.lowercased()
        if let index = fields.firstIndex(where: { $0.name.lowercased() == lowered }) {
            fields.removeAll { $0.name.lowercased() == lowered }
            fields.insert((name, value), at: min(index, fields.count))
        } else {
            fields.append((name, value))
        }
    }

    /// Overrides the fields of the names in `other` with its fields (httpie's `update`).
    mutating func update(with other: HeaderFields) {
        let names = Set(other.fields.map { $0.name.lowercased() })
        fields.removeAll { names.contains($0.name.lowercased()) }
        fields += other.fields
    }

    /// Whether a field of `name` (a value or a removal) is present.
    func contains(_ name: String) -> Bool { fields.contains { $0.name.lowercased() == name.lowercased() } }

    /// The first value of `name`.
    func value(_ name: String) -> String? {
        fields.first { $0.name.lowercased() == name.lowercased() }?.value ?? nil
    }
}

/// What the items of a request say, collected as httpie collects them.
struct ItemContent {
    /// `Header:value`, `Header;`, `Header:@file` items.
    var headers = HeaderFields()
    /// Query parameters, the values of a repeated name together at its first place.
    var query: [(String, String)] = []
    /// The JSON body the data items build (JSON mode), `nil` when they build none.
    var json: JSONValue?
    /// Form fields (form mode), grouped like the query.
    var form: [(String, String)] = []
    /// The `=`, `=@` and `@` items as multipart parts, grouped like the query.
    var multipart: [MultipartField] = []
    /// `@` items: files.
    var files: [MultipartField] = []
    /// The data items given (any mode).
    var dataItems = 0

    /// Collects `items`; `form` when fields go in a form (`--form`, `--multipart`) rather than JSON.
    init(items: [RequestItem], form: Bool) throws {
        var query: [(String, String)] = [], formFields: [(String, String)] = [], parts: [MultipartField] = []
        let jsonItems = form ? [] : items.filter { $0.kind.isJSONField }
        if !jsonItems.isEmpty {
            let pairs = try jsonItems.map { ($0.key, try ItemContent.jsonValue(of: $0)) }
            do {
                json = try NestedJSON.build(pairs)
            } catch let failure as NestedJSON.Failure {
                throw ValidationError(failure.message)
            }
        }
        for item in items where form || !item.kind.isJSONField {
            if item.kind.isData { dataItems += 1 }
            switch item.kind {
            case .header: headers.add(item.key, item.value.isEmpty ? nil : item.value)
            case .emptyHeader:
                guard item.value.isEmpty else {
                    throw ValidationError("Invalid item '\(item.original)' (to specify an empty header use `Header;`)")
                }
                headers.add(item.key, "")
            case .headerFile: headers.add(item.key, try RequestFiles.text(of: item).trimmingTrailingNewlines)
            case .query: query.append((item.key, item.value))
            case .queryFile: query.append((item.key, try RequestFiles.text(of: item).trimmingTrailingNewlines))
            case .field, .fieldFile:
                let value = item.kind == .field ? item.value : try RequestFiles.text(of: item)
                formFields.append((item.key, value))
                parts.append(.text(name: item.key, value: value))
            case .json, .jsonFile: formFields.append((item.key, try ItemContent.formValue(of: item)))
            case .file:
                let file = try RequestFiles.filePart(of: item)
                files.append(file)
                parts.append(file)
            }
        }
        dataItems += jsonItems.count
        self.query = ItemContent.grouped(query)
        self.form = ItemContent.grouped(formFields)
        self.multipart = ItemContent.grouped(parts.map { ($0.name, $0) }).map(\.1)
    }

    /// Pairs with the values of a repeated name moved up to the name's first place (httpie's ordered
    /// multi-value dictionaries).
    static func grouped<Value>(_ pairs: [(String, Value)]) -> [(String, Value)] {
        var order: [String] = []
        var values: [String: [Value]] = [:]
        for (name, value) in pairs {
            if values[name] == nil { order.append(name) }
            values[name, default: []].append(value)
        }
        return order.flatMap { name in (values[name] ?? []).map { (name, $0) } }
    }

    /// The JSON value of a data item of a JSON body.
    private static func jsonValue(of item: RequestItem) throws -> JSONValue {
        switch item.kind {
        case .field: return .string(item.value)
        case .fieldFile: return .string(try RequestFiles.text(of: item))
        case .json: return try parsedJSON(item.value, item: item)
        default: return try parsedJSON(try RequestFiles.text(of: item), item: item)
        }
    }

    private static func parsedJSON(_ text: String, item: RequestItem) throws -> JSONValue {
        do {
            return try JSONReader.parse(text)
        } catch {
            throw ValidationError("'\(item.original)': \(error)")
        }
    }

    /// A `:=` item in a form: only a string or a number (as its text) fits; `true` is `True` there,
    /// as Python writes it.
    private static func formValue(of item: RequestItem) throws -> String {
        let text = item.kind == .json ? item.value : try RequestFiles.text(of: item)
        switch try? JSONReader.parse(text) {
        case .string(let string)?: return string
        case .number(let literal)?: return literal
        case .bool(let value)?: return value ? "True" : "False"
        default: throw ValidationError("Can't use complex JSON value types with --form/--multipart.")
        }
    }
}

extension String {
    /// The text without the newlines it ends with (a file's last line break).
    var trimmingTrailingNewlines: String {
        var text = self
        while text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}
