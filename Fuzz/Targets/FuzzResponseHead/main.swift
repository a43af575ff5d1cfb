// Fuzzes ResponseHeaderParser the way curl's header callback drives it: the input is cut into lines at
// LF (each keeps its line end, as curl hands them over), every line is consumed, and every head the
// parser completes is read through all its accessors and turned into Foundation's HTTPURLResponse.
//
// Invariants besides not crashing: a valid Content-Length is the one `declaredContentLength` reports,
// every field (with a readable name) is found again by `value(for:)`, and the header dictionary never
// has more entries than the head has fields.
import FuzzSupport
import Foundation
@testable import OperationNetworking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private let url = URL(fileURLWithPath: "/fuzz")

private func check(_ head: ResponseHead) {
    _ = head.mimeType
    _ = head.textEncodingName
    let fields = head.fields
    if head.expectedContentLength >= 0, head.declaredContentLength != head.expectedContentLength {
        FuzzDriver.fail("Content-Length \(head.expectedContentLength) declared as \(String(describing: head.declaredContentLength))")
    }
    for (name, _) in fields where !name.unicodeScalars.contains("\u{FFFD}") {
        guard head.value(for: name) != nil else { FuzzDriver.fail("field \(name.debugDescription) not found by value(for:)") }
        guard !head.values(for: name).isEmpty else { FuzzDriver.fail("field \(name.debugDescription) not found by values(for:)") }
    }
    let dictionary = head.headerDictionary
    guard dictionary.count <= fields.count else { FuzzDriver.fail("\(dictionary.count) dictionary entries from \(fields.count) fields") }
    _ = head.makeResponse()
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzResponseHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    // A small limit now and then, so the "too large" path is reached too.
    let selector = input.byte()
    var parser = selector < 0x10 ? ResponseHeaderParser(limit: Int(selector) * 16) : ResponseHeaderParser()
    let bytes = input.remaining
    var start = 0
    while start < bytes.count {
        var end = start
        while end < bytes.count, bytes[end] != 0x0A { end += 1 }
        end = min(end + 1, bytes.count)
        let event = bytes[start..<end].withUnsafeBytes { parser.consume($0) }
        start = end
        switch event {
        case .headComplete: check(parser.head(url: url))
        case .tooLarge: return 0
        case .none, .informational: continue
        }
    }
    _ = parser.value(for: "content-type")
    _ = parser.hasField("location")
    check(parser.head(url: url))
    return 0
}

private func seeds() -> [String: [UInt8]] {
    func head(_ lines: [String]) -> [UInt8] { [0xFF] + Array(lines.map { $0 + "\r\n" }.joined().utf8) }
    return [
        "ok": head(["HTTP/1.1 200 OK", "Content-Type: text/html; charset=\"UTF-8\"", "Content-Length: 12", ""]),
        "continue": head(["HTTP/1.1 100 Continue", "", "HTTP/2 201 Created", "Location: /x", "content-length: 0", ""]),
        "folded": head(["HTTP/1.0 302 Found", "X-Long: first", " second\tthird", "Set-Cookie: a=1", "Set-Cookie: b=2", ""]),
        "odd": head(["HTTP/1.1 abc", "Content-Length: 99999999999999999999999", "Content-Type:;charset=", ":empty", "novalue", ""]),
        "small-limit": [0x02] + Array("HTTP/1.1 200 OK\r\nA: b\r\nC: d\r\n\r\n".utf8),
    ]
}

exit(FuzzDriver.main(seeds: seeds) { fuzzResponseHead($0, $1) })
