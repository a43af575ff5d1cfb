// Fuzzes the query string / form encoder (QueryString) with parameter graphs built from the input:
// strings (any UTF-8), integers, doubles and floats of any bit pattern (NaN and infinities included),
// NSNumber, Decimal, NSNull, URLs, and dictionaries, arrays and sets nested a few levels.
//
// Besides not crashing, the encoder must keep its promises: throw exactly when a value is not a finite
// number, write only AFN's unreserved characters, `%XX`, `=` and `&`, give one `&`-separated pair per
// flattened parameter with the key percent-decoding back to the flattened name, and produce a query
// that HTTPRequestSerializer can put into a URL.
import FuzzSupport
import Foundation
@testable import OperationNetworking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Nesting stays well inside the documented depth limit: the overflow past it is issue 12's defect 1,
/// covered by its own tests, and would drown every other finding here.
private let maximumDepth = 6
private let maximumNodes = 80

private struct Builder {
    var input: FuzzInput
    var nodes = 0
    init(_ input: FuzzInput) { self.input = input }

    mutating func value(depth: Int) -> Any {
        nodes += 1
        let op = input.byte()
        let scalarsOnly = depth >= maximumDepth || nodes >= maximumNodes
        switch scalarsOnly ? op % 12 : op % 16 {
        case 0: return input.string()
        case 1: return Int(truncatingIfNeeded: input.uint64())
        case 2: return Double(bitPattern: input.uint64())
        case 3: return Float(bitPattern: input.uint32())
        case 4: return input.bool()
        case 5: return NSNumber(value: Double(bitPattern: input.uint64()))
        case 6: return NSNumber(value: Int64(bitPattern: input.uint64()))
        case 7: return NSNumber(value: input.bool())
        case 8: return NSNull()
        case 9: return URL(string: input.string()) ?? URL(fileURLWithPath: "/fuzz")
        case 10: return decimal()
        case 11:
            switch input.byte() % 4 {
            case 0: return UInt64(input.uint64())
            case 1: return Int8(bitPattern: input.byte())
            case 2: return UInt16(input.uint16())
            default: return NSNumber(value: Float(bitPattern: input.uint32()))
            }
        case 12:
            var dictionary: [String: Any] = [:]
            for _ in 0..<(input.byte() % 5) { dictionary[input.string(limit: 16)] = value(depth: depth + 1) }
            return dictionary
        case 13:
            var dictionary: [AnyHashable: Any] = [:]
            for _ in 0..<(input.byte() % 5) {
                // Keys are rendered with `try?` (a non-finite key would become ""), so keep them finite.
                let key: AnyHashable = input.bool() ? AnyHashable(Int(Int8(bitPattern: input.byte())))
                                                   : AnyHashable(input.string(limit: 8))
                dictionary[key] = value(depth: depth + 1)
            }
            return dictionary
        case 14:
            return (0..<(input.byte() % 5)).map { _ in value(depth: depth + 1) }
        default:
            var set = Set<AnyHashable>()
            for _ in 0..<(input.byte() % 5) {
                switch input.byte() % 3 {
                case 0: set.insert(AnyHashable(input.string(limit: 8)))
                case 1: set.insert(AnyHashable(Int(Int16(bitPattern: input.uint16()))))
                default: set.insert(AnyHashable(Double(bitPattern: input.uint64())))
                }
            }
            return set
        }
    }

    private mutating func decimal() -> Decimal {
        if input.byte() == 0xFF { return Decimal.nan }
        let exponent = Int(Int8(bitPattern: input.byte()))
        let significand = Decimal(input.uint64())
        return Decimal(sign: input.bool() ? .minus : .plus, exponent: exponent, significand: significand)
    }
}

/// Whether `value` holds a NaN or an infinity where the encoder renders it: a value (dictionary keys
/// are rendered leniently), an array element or a set member. Written against the final graph, since a
/// repeated dictionary key replaces an earlier value.
private func containsNonFinite(_ value: Any) -> Bool {
    switch value {
    case let dictionary as [AnyHashable: Any]: return dictionary.values.contains(where: containsNonFinite)
    case let array as [Any]: return array.contains(where: containsNonFinite)
    case let set as Set<AnyHashable>: return set.contains { containsNonFinite($0.base) }
    case let number as NSNumber where type(of: value) is NSNumber.Type:
        return !number.doubleValue.isFinite
    case let double as Double: return !double.isFinite
    case let float as Float: return !float.isFinite
    case let decimal as Decimal: return !decimal.isFinite
    default: return false
    }
}

private let allowedBytes = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/?".utf8))
private let upperHex = Set(Array("0123456789ABCDEF".utf8))

private func checkShape(_ encoded: String) {
    let bytes = Array(encoded.utf8)
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == 0x25 {   // '%'
            guard index + 2 < bytes.count, upperHex.contains(bytes[index + 1]), upperHex.contains(bytes[index + 2]) else {
                FuzzDriver.fail("a '%' not followed by two upper-case hex digits in \(encoded.debugDescription)")
            }
            index += 3
            continue
        }
        guard allowedBytes.contains(byte) || byte == 0x3D || byte == 0x26 else {   // '=' '&'
            FuzzDriver.fail("byte \(byte) left unescaped in \(encoded.debugDescription)")
        }
        index += 1
    }
}

private func check(_ parameters: Any, hasNonFiniteValue: Bool) {
    // The generated parameters nest at most a few levels, far under the serializer's limit.
    let flattened: [(name: String, value: Any?)]
    do {
        flattened = try QueryString.flatten(parameters)
    } catch {
        FuzzDriver.fail("flatten threw \(error) for shallow parameters")
    }
    let encoded: String
    do {
        encoded = try QueryString.encode(parameters)
    } catch {
        guard hasNonFiniteValue else { FuzzDriver.fail("encode threw \(error) without a non-finite number") }
        return
    }
    guard !hasNonFiniteValue else { FuzzDriver.fail("a non-finite number was encoded: \(encoded.debugDescription)") }
    checkShape(encoded)
    let components = encoded.split(separator: "&", omittingEmptySubsequences: false)
    guard components.count == max(flattened.count, 1) else {
        FuzzDriver.fail("\(flattened.count) flattened pairs but \(components.count) components in \(encoded.debugDescription)")
    }
    for (component, pair) in zip(components, flattened) {
        let key = component.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard String(key[0]).removingPercentEncoding == pair.name else {
            FuzzDriver.fail("key \(key[0]) does not decode to \(pair.name.debugDescription)")
        }
        guard (key.count == 2) == (pair.value != nil) else {
            FuzzDriver.fail("component \(component) and value \(String(describing: pair.value)) disagree on '='")
        }
    }
    // The serializer must be able to send what the encoder wrote, in the URL and as a form body.
    let serializer = HTTPRequestSerializer()
    do {
        let get = try serializer.request(method: "GET", urlString: "http://fuzz.invalid/p", parameters: parameters)
        guard get.url != nil else { FuzzDriver.fail("GET request without a URL") }
        let post = try serializer.request(method: "POST", urlString: "http://fuzz.invalid/p", parameters: parameters)
        guard post.httpBody == Data(encoded.utf8) else { FuzzDriver.fail("form body differs from the encoded query") }
    } catch {
        FuzzDriver.fail("the serializer refused encodable parameters: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzQueryString(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var builder = Builder(FuzzInput(data, size))
    let parameters = builder.value(depth: 0)
    check(parameters, hasNonFiniteValue: containsNonFinite(parameters))
    return 0
}

private func seeds() -> [String: [UInt8]] {
    func text(_ string: String) -> [UInt8] { [UInt8(string.utf8.count)] + Array(string.utf8) }
    func le64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    return [
        // {"user": "ada lovelace"}
        "dictionary": [12, 1] + text("user") + [0] + text("ada lovelace"),
        // {"a": [1, 1.5, NSNull], "b": {"c": "é&="}}
        "nested": [12, 2] + text("a") + [14, 3, 1] + le64(1) + [2] + le64(1.5.bitPattern) + [8]
            + text("b") + [12, 1] + text("c") + [0] + text("é&="),
        // {"n": NaN} (must throw)
        "nan": [12, 1] + text("n") + [2] + le64(Double.nan.bitPattern),
        // Set of a string, an integer and a double, under [AnyHashable: Any]
        "set": [13, 1, 1, 7, 15, 3, 0] + text("x") + [1, 9, 0, 2] + le64(0.25.bitPattern),
        // a URL and a Decimal
        "url-decimal": [14, 2, 9] + text("https://example.com/a?b=c") + [10, 3, 0xFE, 0x39, 0x30, 0, 0, 0, 0, 0, 0, 0],
    ]
}

exit(FuzzDriver.main(seeds: seeds) { fuzzQueryString($0, $1) })
