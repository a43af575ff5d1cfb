import Foundation

/// Checks the structure of a binary property list (`bplist00`) before Foundation parses it.
///
/// corelibs' parser trusts the file: a crafted or damaged archive whose objects reference each other in
/// a cycle, or whose lengths run past the end, makes it recurse until the process dies. This scanner
/// walks the object graph itself — bounds, lengths, reference ranges, depth and cycles — and collects
/// the `$classname` strings of a keyed archive, so `SafeArchive` can refuse anything unexpected first.
/// - Threading: a value; pure.
struct BinaryPropertyListScanner {
    /// Why a property list was refused.
    struct Invalid: Error {
        let reason: String
    }

    private let bytes: [UInt8]
    private var offsets: [Int] = []
    private var objectReferenceSize = 0
    private var offsetTableStart = 0
    /// The `$classname` values found.
    private(set) var classNames = Set<String>()
    /// For each key of an archived object's dictionary, the `$classname`s of the objects that hold
    /// something other than a number or a boolean under it. `NSCoder`'s number decoders read such a
    /// value as 0 or `false` without a word, so `SafeArchive` checks number-typed keys against this.
    private(set) var nonNumericValues: [String: Set<String>] = [:]

    static let maximumObjects = 1_000_000
    static let maximumDepth = 256

    init(_ data: Data) {
        bytes = [UInt8](data)
    }

    /// Validates the whole graph from the top object; throws `Invalid` for anything malformed.
    mutating func scan() throws {
        guard bytes.count >= 40, bytes.starts(with: Array("bplist00".utf8)) else { throw Invalid(reason: "not a binary property list") }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        objectReferenceSize = Int(bytes[trailer + 7])
        let count = integer(at: trailer + 8, size: 8)
        let top = integer(at: trailer + 16, size: 8)
        offsetTableStart = integer(at: trailer + 24, size: 8)
        // CoreFoundation's own trailer checks too: whatever its binary parser refuses, it retries as an
        // XML and then an OpenStep plist, and corelibs leaks the error objects of those attempts — so
        // nothing may reach it that is not a binary plist by CF's rules (the offset table filling the
        // space up to the trailer exactly, references wide enough to name every object).
        guard (1...8).contains(offsetSize), (1...8).contains(objectReferenceSize),
              count >= 1, count <= BinaryPropertyListScanner.maximumObjects, top >= 0, top < count,
              offsetTableStart >= 9, offsetTableStart <= trailer,
              count == (trailer - offsetTableStart) / offsetSize, (trailer - offsetTableStart) % offsetSize == 0,
              objectReferenceSize == 8 || count < 1 << (8 * objectReferenceSize),
              offsetSize == 8 || offsetTableStart < 1 << (8 * offsetSize) else {
            throw Invalid(reason: "bad trailer")
        }
        offsets = (0..<count).map { integer(at: offsetTableStart + $0 * offsetSize, size: offsetSize) }
        guard offsets.allSatisfy({ $0 >= 8 && $0 < offsetTableStart }) else { throw Invalid(reason: "object offset out of range") }
        try walk(from: top)
        try checkKeyedArchiveReferences(top: top)
    }

    /// In a keyed archive, objects refer to each other by UID (index into `$objects`); the unarchiver
    /// follows them recursively, so they must stay in range and must not form a cycle.
    private mutating func checkKeyedArchiveReferences(top: Int) throws {
        guard let objectsArray = try dictionaryValue(of: top, forKey: "$objects"),
              bytes[offsets[objectsArray]] >> 4 == 0xA else { throw Invalid(reason: "no $objects array") }
        let entries = try children(of: objectsArray)
        var edges = [[Int]](repeating: [], count: entries.count)
        for (position, object) in entries.enumerated() where bytes[offsets[object]] >> 4 == 0xD {
            if let classReference = try dictionaryValue(of: object, forKey: "$class") {
                // corelibs casts the target of `$class` without checking it: it must be a class description.
                guard let uid = uidValue(classReference), uid < entries.count,
                      bytes[offsets[entries[uid]]] >> 4 == 0xD,
                      let name = try dictionaryValue(of: entries[uid], forKey: "$classname"), let className = string(at: name),
                      let chain = try dictionaryValue(of: entries[uid], forKey: "$classes"),
                      bytes[offsets[chain]] >> 4 == 0xA,
                      try children(of: chain).allSatisfy({ string(at: $0) != nil }) else {
                    throw Invalid(reason: "bad class reference")
                }
                try recordNonNumericValues(of: object, className: className)
            }
            for value in try dictionaryValues(of: object) {
                guard let uid = uidValue(value) else { continue }
                guard uid < entries.count else { throw Invalid(reason: "UID out of range") }
                edges[position].append(uid)
            }
        }
        if let rootDictionary = try dictionaryValue(of: top, forKey: "$top") {
            for value in try dictionaryValues(of: rootDictionary) {
                if let uid = uidValue(value), uid >= entries.count { throw Invalid(reason: "UID out of range") }
            }
        }
        // Iterative DFS over UID edges: a reference back onto the current path is a cycle.
        var state = [UInt8](repeating: 0, count: entries.count)   // 0 new, 1 on path, 2 done
        for start in entries.indices where state[start] == 0 {
            var stack: [(node: Int, next: Int)] = [(start, 0)]
            state[start] = 1
            while let last = stack.last {
                if last.next == edges[last.node].count {
                    state[last.node] = 2
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].next += 1
                let child = edges[last.node][last.next]
                if state[child] == 1 { throw Invalid(reason: "UID cycle") }
                if state[child] == 0 {
                    guard stack.count < BinaryPropertyListScanner.maximumDepth else { throw Invalid(reason: "nesting too deep") }
                    state[child] = 1
                    stack.append((child, 0))
                }
            }
        }
    }

    /// The value object of `key` in the dictionary object `object`, if any.
    private mutating func dictionaryValue(of object: Int, forKey key: String) throws -> Int? {
        guard bytes[offsets[object]] >> 4 == 0xD else { return nil }
        let refs = try children(of: object)
        let count = refs.count / 2
        for index in 0..<count where string(at: refs[index]) == key { return refs[count + index] }
        return nil
    }

    private mutating func dictionaryValues(of object: Int) throws -> [Int] {
        let refs = try children(of: object)
        return Array(refs[(refs.count / 2)...])
    }

    /// Notes the keys of the archived object `object` whose values are not numbers or booleans.
    private mutating func recordNonNumericValues(of object: Int, className: String) throws {
        let refs = try children(of: object)
        let count = refs.count / 2
        for index in 0..<count {
            guard let key = keyString(at: refs[index]), key != "$class" else { continue }
            let value = refs[count + index]
            guard value >= 0, value < offsets.count else { throw Invalid(reason: "reference out of range") }
            let start = offsets[value]
            let kind = bytes[start] >> 4, info = bytes[start] & 0x0F
            let isNumber = kind == 0x1 || kind == 0x2 || (kind == 0x0 && (info == 8 || info == 9))
            if !isNumber { nonNumericValues[key, default: []].insert(className) }
        }
    }

    /// A dictionary key's text: ASCII or UTF-16 (both are strings to Foundation's parser).
    private func keyString(at object: Int) -> String? {
        if let ascii = string(at: object) { return ascii }
        guard object >= 0, object < offsets.count else { return nil }
        let start = offsets[object]
        guard bytes[start] >> 4 == 0x6, let (length, body) = try? lengthAndStart(start, Int(bytes[start] & 0x0F)),
              body + 2 * length <= offsetTableStart else { return nil }
        let units = (0..<length).map { UInt16(bytes[body + 2 * $0]) << 8 | UInt16(bytes[body + 2 * $0 + 1]) }
        return String(decoding: units, as: UTF16.self)
    }

    /// The integer of a UID object, or `nil` when `object` is not one.
    private func uidValue(_ object: Int) -> Int? {
        guard object >= 0, object < offsets.count else { return nil }
        let start = offsets[object]
        guard bytes[start] >> 4 == 0x8 else { return nil }
        let value = integer(at: start + 1, size: Int(bytes[start] & 0x0F) + 1)
        return value >= 0 ? value : nil
    }

    // MARK: - Private

    /// Depth-first walk with an explicit stack: detects cycles (a reference to an object on the
    /// current path) and bounds the depth; each object is parsed once.
    private mutating func walk(from top: Int) throws {
        var done = [Bool](repeating: false, count: offsets.count)
        var onPath = [Bool](repeating: false, count: offsets.count)
        var stack: [(object: Int, children: [Int], next: Int)] = []
        onPath[top] = true
        let topChildren = try children(of: top)
        try checkDistinctKeys(of: top)
        stack.append((top, topChildren, 0))
        while !stack.isEmpty {
            let last = stack.count - 1
            if stack[last].next == stack[last].children.count {
                done[stack[last].object] = true
                onPath[stack[last].object] = false
                stack.removeLast()
                continue
            }
            let child = stack[last].children[stack[last].next]
            stack[last].next += 1
            guard child >= 0, child < offsets.count else { throw Invalid(reason: "reference out of range") }
            if onPath[child] { throw Invalid(reason: "reference cycle") }
            if done[child] { continue }
            guard stack.count < BinaryPropertyListScanner.maximumDepth else { throw Invalid(reason: "nesting too deep") }
            onPath[child] = true
            let grandchildren = try children(of: child)
            try checkDistinctKeys(of: child)
            stack.append((child, grandchildren, 0))
        }
    }

    /// A dictionary naming one key twice is refused: CF builds it by handing the key list over to the
    /// new dictionary, which drops the second key without releasing it (a leak per tampered archive).
    private func checkDistinctKeys(of object: Int) throws {
        let start = offsets[object]
        guard bytes[start] >> 4 == 0xD else { return }
        let (length, body) = try lengthAndStart(start, Int(bytes[start] & 0x0F))
        guard length > 1 else { return }
        var seen = Set<String>()
        for index in 0..<length {
            let key = integer(at: body + index * objectReferenceSize, size: objectReferenceSize)
            guard let text = keyString(at: key), seen.insert(text).inserted else {
                throw Invalid(reason: "dictionary key repeated")
            }
        }
    }

    /// The references an object holds (empty for scalars), after checking its bounds.
    private mutating func children(of object: Int) throws -> [Int] {
        let start = offsets[object]
        let marker = bytes[start]
        let kind = marker >> 4
        let info = Int(marker & 0x0F)
        switch kind {
        case 0x0:
            // null, false, true: CF's parser refuses the fill byte (0x0F) and everything else.
            guard [0, 8, 9].contains(info) else { throw Invalid(reason: "bad simple value") }
            return []
        case 0x1, 0x2:
            // Integers of 1 to 16 bytes; reals only as float (4 bytes) or double (8), as CF reads them.
            guard kind == 0x1 ? info <= 4 : (info == 2 || info == 3),
                  start + 1 + (1 << info) <= offsetTableStart else { throw Invalid(reason: "bad number") }
            return []
        case 0x3:
            guard info == 3, start + 9 <= offsetTableStart else { throw Invalid(reason: "bad date") }
            return []
        case 0x8:
            // CF refuses a UID above UInt32.max.
            guard start + 2 + info <= offsetTableStart,
                  (0...Int(UInt32.max)).contains(integer(at: start + 1, size: info + 1)) else { throw Invalid(reason: "bad UID") }
            return []
        case 0x4, 0x5, 0x6:
            let (length, body) = try lengthAndStart(start, info)
            let size = kind == 0x6 ? length * 2 : length
            guard size >= 0, body + size <= offsetTableStart else { throw Invalid(reason: "data or string past the end") }
            // CF copies UTF-16 text through a buffer of its length, and an allocation of 0 bytes fails it.
            guard kind != 0x6 || length > 0 else { throw Invalid(reason: "empty UTF-16 string") }
            // CF decodes an ASCII string object strictly: a byte above 0x7F fails the whole parse.
            guard kind != 0x5 || !bytes[body..<(body + size)].contains(where: { $0 >= 0x80 }) else {
                throw Invalid(reason: "non-ASCII byte in an ASCII string")
            }
            return []
        case 0xC:
            throw Invalid(reason: "sets do not occur in keyed archives")
        case 0xA, 0xD:
            let (length, body) = try lengthAndStart(start, info)
            let references = kind == 0xD ? length * 2 : length
            guard references >= 0, references <= offsets.count * 2,
                  body + references * objectReferenceSize <= offsetTableStart else { throw Invalid(reason: "collection past the end") }
            let refs = (0..<references).map { integer(at: body + $0 * objectReferenceSize, size: objectReferenceSize) }
            if kind == 0xD {
                // Foundation bridges keys to AnyHashable without checking: only strings are accepted.
                for key in refs[0..<length] {
                    guard key >= 0, key < offsets.count, [0x5, 0x6].contains(bytes[offsets[key]] >> 4) else {
                        throw Invalid(reason: "dictionary key is not a string")
                    }
                }
                try collectClassName(keys: Array(refs[0..<length]), values: Array(refs[length...]))
            }
            return refs
        default:
            throw Invalid(reason: "unknown object type")
        }
    }

    /// A collection's or string's length (inline, or a following integer) and where its body starts.
    private func lengthAndStart(_ start: Int, _ info: Int) throws -> (Int, Int) {
        guard info == 0x0F else { return (info, start + 1) }
        guard start + 2 <= offsetTableStart, bytes[start + 1] >> 4 == 0x1 else { throw Invalid(reason: "bad length") }
        let size = 1 << Int(bytes[start + 1] & 0x0F)
        guard size <= 8, start + 2 + size <= offsetTableStart else { throw Invalid(reason: "bad length") }
        let length = integer(at: start + 2, size: size)
        guard length >= 0, length <= offsetTableStart else { throw Invalid(reason: "length too large") }
        return (length, start + 2 + size)
    }

    /// Records the value of a `$classname` key.
    private mutating func collectClassName(keys: [Int], values: [Int]) throws {
        for (key, value) in zip(keys, values) where string(at: key) == "$classname" {
            guard let name = string(at: value) else { throw Invalid(reason: "class name is not a string") }
            classNames.insert(name)
        }
    }

    /// An ASCII string object's text, if the object is one (and in range).
    private func string(at object: Int) -> String? {
        guard object >= 0, object < offsets.count else { return nil }
        let start = offsets[object]
        guard bytes[start] >> 4 == 0x5, let (length, body) = try? lengthAndStart(start, Int(bytes[start] & 0x0F)),
              body + length <= offsetTableStart else { return nil }
        return String(decoding: bytes[body..<(body + length)], as: UTF8.self)
    }

    /// A big-endian unsigned integer of `size` bytes (clamped into `Int`).
    private func integer(at start: Int, size: Int) -> Int {
        guard start >= 0, start + size <= bytes.count else { return -1 }
        var value: UInt64 = 0
        for index in start..<(start + size) { value = value << 8 | UInt64(bytes[index]) }
        return value > UInt64(Int.max) ? -1 : Int(value)
    }
}
