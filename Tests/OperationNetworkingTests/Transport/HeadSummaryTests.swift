import Foundation
@testable import OperationNetworking
import XCTest

/// The fields every response is read for (`Content-Type`, `Content-Length`, `Content-Encoding`,
/// `Set-Cookie`) are picked out when the head is made. Checked here against a plain reading of the same
/// fields: names in any case are found, names one byte away (a '\r' where the '-' is, '_', a letter off
/// by 0x20 outside the letters) are not, and the same holds for a block with a folded line, for a
/// head decoded from an archive, and for a head with one field added.
final class HeadSummaryTests: LibraryTestCase {
    private static let targets = ["content-type", "content-length", "content-encoding", "set-cookie"]
    /// Bytes a name may be given instead of one of its own: each is near a target byte in some way.
    private static let strays: [UInt8] = [0x0D, 0x5F, 0x0D | 0x20, 0x2D, 0x40, 0x60, 0x7B, 0x5B, 0x30, 0x7F]

    func testTheFieldsEveryResponseNeedsAreFoundByNameInAnyCaseAndOnlyByName() throws {
        var generator = SeededGenerator(seed: 2311)
        let url = try XCTUnwrap(URL(string: "http://h/"))
        for round in 0..<600 {
            var fields: [(name: String, value: String)] = []
            for _ in 0..<Int(generator.next() % 7) {
                let target = Self.targets[Int(generator.next() % UInt64(Self.targets.count))]
                var name = Array(target.utf8).map { byte in
                    (0x61...0x7A).contains(byte) && generator.next() % 2 == 0 ? byte - 0x20 : byte
                }
                if generator.next() % 3 == 0 {
                    name[Int(generator.next() % UInt64(name.count))] = Self.strays[Int(generator.next() % UInt64(Self.strays.count))]
                }
                if generator.next() % 8 == 0 { name.removeLast() }
                let value = target == "content-length" ? ["5", "7", "05"][Int(generator.next() % 3)]
                    : target == "content-type" ? ["text/plain", "Application/JSON"][Int(generator.next() % 2)]
                    : ["gzip", "a=1"][Int(generator.next() % 2)]
                fields.append((String(decoding: name, as: UTF8.self), value))
            }
            fields.append(("X-Other", "a"))
            let expected = Expected(fields)

            var parser = ResponseHeaderParser()
            _ = parser.feed("HTTP/1.1 200 OK\r\n")
            for field in fields { _ = parser.feed("\(field.name): \(field.value)\r\n") }
            if round % 2 == 1 { _ = parser.feed("  folded\r\n") }   // extends X-Other only
            XCTAssertEqual(parser.feed("\r\n"), .headComplete)
            expected.check(parser.head(url: url), "\(fields), folded: \(round % 2 == 1)")
            expected.check(ResponseHead(url: url, statusCode: 200, httpVersion: "HTTP/1.1", fields: fields), "decoded \(fields)")

            // A field added after them (the cache's `Age` on a hit) keeps what was found, or, when it is one
            // of those fields, is read like the others.
            let added = generator.next() % 2 == 0 ? ("Age", "12")
                : (Self.targets[Int(generator.next() % UInt64(Self.targets.count))].uppercased(), "9")
            let extended = parser.head(url: url).adding(name: added.0, value: added.1)
            Expected(fields + [added]).check(extended, "\(fields) + \(added)")
            XCTAssertEqual(extended.fields.last?.name, added.0)
            XCTAssertEqual(extended.value(for: added.0), fields.first { $0.name.lowercased() == added.0.lowercased() }?.value ?? added.1)
        }
    }

    /// What a plain reading of the fields says.
    private struct Expected {
        var hasSetCookie = false, conflicting = false
        var length: Int64 = -1, mimeType: String?, encoding: String?

        init(_ fields: [(name: String, value: String)]) {
            var firstLength: String?
            for (name, value) in fields {
                switch name.lowercased() {
                case "set-cookie": hasSetCookie = true
                case "content-type" where mimeType == nil: mimeType = value.lowercased()
                case "content-encoding" where encoding == nil: encoding = value
                case "content-length":
                    if let firstLength { conflicting = conflicting || firstLength != value } else {
                        firstLength = value
                        length = Int64(value) ?? -1
                    }
                default: break
                }
            }
        }

        func check(_ head: ResponseHead, _ context: String, file: StaticString = #filePath, line: UInt = #line) {
            XCTAssertEqual(head.hasSetCookie, hasSetCookie, context, file: file, line: line)
            XCTAssertEqual(head.hasConflictingContentLengths, conflicting, context, file: file, line: line)
            XCTAssertEqual(head.expectedContentLength, length, context, file: file, line: line)
            XCTAssertEqual(head.mimeType, mimeType, context, file: file, line: line)
            XCTAssertEqual(head.contentEncoding, encoding, context, file: file, line: line)
        }
    }
}
