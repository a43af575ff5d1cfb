import CCurl
import Foundation
@testable import OperationNetworking
import XCTest

/// The pure parts of the transport: header parsing and the curl → URLError table.
final class TransportUnitTests: LibraryTestCase {
    func testHeaderBlockIsParsedAndInformationalBlocksDropped() throws {
        var parser = ResponseHeaderParser()
        XCTAssertEqual(parser.feed("HTTP/1.1 100 Continue\r\n"), ResponseHeaderParser.Event.none)
        XCTAssertEqual(parser.feed("\r\n"), .informational)
        XCTAssertEqual(parser.feed("HTTP/1.1 404 Not Found\r\n"), ResponseHeaderParser.Event.none)
        _ = parser.feed("Content-Type: text/plain\r\n")
        _ = parser.feed("Set-Cookie: a=1\r\n")
        _ = parser.feed("set-cookie: b=2\r\n")
        _ = parser.feed("X-Folded: one\r\n")
        _ = parser.feed("  two\r\n")
        XCTAssertEqual(parser.feed("\r\n"), .headComplete)
        XCTAssertEqual(parser.statusCode, 404)
        XCTAssertEqual(parser.head(url: try XCTUnwrap(URL(string: "http://h/"))).values(for: "Set-Cookie"), ["a=1", "b=2"])
        XCTAssertEqual(parser.value(for: "x-folded"), "one two")
        let response = try XCTUnwrap(parser.head(url: try XCTUnwrap(URL(string: "http://h/"))).makeResponse())
        XCTAssertEqual(response.statusCode, 404)
        XCTAssertEqual(response.value(forHTTPHeaderField: "Set-Cookie"), "a=1, b=2")
        XCTAssertEqual(response.mimeType, "text/plain")
    }

    /// The fields the parser keeps for a block: checked against a reading of the same lines with
    /// Foundation's trimming, with odd spacing, lines without a colon or a name, folds and trailers.
    func testFieldsMatchAReadingWithFoundationsTrimming() throws {
        var generator = SeededGenerator(seed: 23)
        let pieces = ["Name", "x-a", "Content-Type", "", " ", "\t", "v", "a b", ":", "::", "é"]
        for round in 0..<300 {
            var lines: [String] = []
            for _ in 0..<Int(generator.next() % 8) {
                let shape = generator.next() % 6
                let name = pieces[Int(generator.next() % UInt64(pieces.count))]
                let value = pieces[Int(generator.next() % UInt64(pieces.count))]
                switch shape {
                case 0: lines.append(" \(value)")                // a fold
                case 1: lines.append("\(name)\(value)")          // maybe no colon
                default: lines.append("\(name):\(value) ")
                }
            }
            lines.removeAll { $0.isEmpty }   // an empty line would end the block
            var expected: [(String, String)] = []
            for line in lines {
                let trimmedLine = line.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                if line.first == " " || line.first == "\t" {
                    if let last = expected.popLast() { expected.append((last.0, last.1 + " " + trimmedLine)) }
                    continue
                }
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                let value = line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                if !name.isEmpty { expected.append((name, value)) }
            }
            var parser = ResponseHeaderParser()
            _ = parser.feed("HTTP/1.1 200 OK\r\n")
            for line in lines { XCTAssertEqual(parser.feed(line + (round % 2 == 0 ? "\r\n" : "\n")), .none) }
            XCTAssertEqual(parser.feed("\r\n"), .headComplete)
            let fields = parser.head(url: try XCTUnwrap(URL(string: "http://h/"))).fields
            XCTAssertEqual(fields.map { "\($0.name)=\($0.value)" }, expected.map { "\($0.0)=\($0.1)" }, "\(lines)")
            // A trailer after the block: the block's fields are taken again, with it.
            XCTAssertEqual(parser.feed("Trailer-X: t\r\n"), .none)
            XCTAssertEqual(parser.feed("\r\n"), .headComplete)
            XCTAssertEqual(parser.value(for: "trailer-x"), "t")
        }
    }

    func testContentTypeAndLengthAreParsedFromBytes() throws {
        var parser = ResponseHeaderParser()
        _ = parser.feed("HTTP/1.1 200 OK\r\n")
        _ = parser.feed("content-TYPE:  Text/HTML ; foo=bar; Charset=\"ISO-8859-1\" \r\n")
        _ = parser.feed("Content-Length: 12\r\n")
        _ = parser.feed("Content-Type: application/json\r\n")
        XCTAssertEqual(parser.feed("\r\n"), .headComplete)
        let head = parser.head(url: try XCTUnwrap(URL(string: "http://h/")))
        XCTAssertEqual(head.mimeType, "text/html", "the first Content-Type counts, lowercased, without parameters")
        XCTAssertEqual(head.textEncodingName, "ISO-8859-1")
        XCTAssertEqual(head.expectedContentLength, 12)
        XCTAssertEqual(head.httpVersion, "HTTP/1.1")

        for (value, expected) in [("99999999999999999999999", Int64(-1)), ("-5", -1), ("1 2", -1), ("", -1), ("0", 0)] {
            var other = ResponseHeaderParser()
            _ = other.feed("HTTP/2 200\r\n")
            _ = other.feed("Content-Length: \(value)\r\n")
            _ = other.feed("Content-Type: ;charset=utf-8\r\n")
            _ = other.feed("\r\n")
            let parsed = other.head(url: try XCTUnwrap(URL(string: "http://h/")))
            XCTAssertEqual(parsed.expectedContentLength, expected, value)
            XCTAssertNil(parsed.mimeType)
            XCTAssertEqual(parsed.textEncodingName, "utf-8")
            XCTAssertEqual(parsed.httpVersion, "HTTP/2")
        }
    }

    func testCallerRangesAndOffsetsNeverTrap() {
        XCTAssertEqual(CallerRange(header: "bytes=100-"), .bytes(start: 100, end: nil))
        XCTAssertEqual(CallerRange(header: " Bytes=5-9 "), .bytes(start: 5, end: 9))
        for unusable in ["bytes=-500", "bytes=1-2,4-5", "items=1-", "bytes=9-1", "bytes=a-", "bytes=99999999999999999999-"] {
            XCTAssertEqual(CallerRange(header: unusable), .unusable, unusable)
        }
        // Offsets from a server's Content-Range or an archive can be absurd: sums saturate, never trap.
        XCTAssertEqual(Int64.max.saturatingAdd(1), .max)
        XCTAssertEqual(Int64(9_000_000_000_000_000_000).saturatingAdd(9_000_000_000_000_000_000), .max)
        XCTAssertEqual(Int64(5).saturatingAdd(7), 12)
        XCTAssertEqual(ContentRange("bytes 9223372036854775807-9223372036854775807/*")?.first, .max)
        XCTAssertNil(ContentRange("bytes 99999999999999999999-1/2"))
        XCTAssertEqual(ContentRange("bytes 100-199/1000"), ContentRange("bytes 100-199/1000"))
        XCTAssertEqual(ContentRange("bytes 100-199/1000")?.first, 100)
        XCTAssertEqual(ContentRange("bytes 100-199/1000")?.last, 199)
        XCTAssertEqual(ContentRange("bytes 100-199/1000")?.total, 1000)
        XCTAssertNil(ContentRange("bytes 100-199/1000")?.total.flatMap { $0 < 1000 ? $0 : nil })
        XCTAssertNil(ContentRange("bytes 200-100/1000"), "last before first")
        XCTAssertNil(ContentRange("bytes 100-199/150"), "total not past last")
        XCTAssertNil(ContentRange("bytes */1000"), "an unsatisfied range")
    }

    func testOversizedHeaderBlockIsReported() throws {
        var parser = ResponseHeaderParser(limit: 100)
        _ = parser.feed("HTTP/1.1 200 OK\r\n")
        XCTAssertEqual(parser.feed("X-Filler: \(String(repeating: "a", count: 120))\r\n"), .tooLarge)
    }

    /// The limit counts the whole block, status line included (17 bytes here), and only it: a new
    /// block counts afresh.
    func testTheHeaderLimitCountsTheStatusLineAndRestartsWithEachBlock() throws {
        var parser = ResponseHeaderParser(limit: 100)
        _ = parser.feed("HTTP/1.1 100 Continue\r\n")
        XCTAssertEqual(parser.feed("\r\n"), .informational)
        XCTAssertEqual(parser.feed("HTTP/1.1 200 OK\r\n"), .none)
        let fits = "X-Filler: \(String(repeating: "a", count: 71))\r\n"   // 83 bytes: 100 in all
        XCTAssertEqual(parser.feed(fits), .none)
        XCTAssertEqual(parser.feed("\r\n"), .tooLarge, "the block's end is one byte past the limit")

        var other = ResponseHeaderParser(limit: 100)
        _ = other.feed("HTTP/1.1 200 OK\r\n")
        XCTAssertEqual(other.feed("X-Filler: \(String(repeating: "a", count: 69))\r\n"), .none)   // 81: 98 in all
        XCTAssertEqual(other.feed("\r\n"), .headComplete)
        _ = other.feed("HTTP/1.1 200 OK\r\n")
        XCTAssertEqual(other.feed("X-Filler: \(String(repeating: "b", count: 69))\r\n"), .none, "a new block counts afresh")
        XCTAssertEqual(other.feed("\r\n"), .headComplete)
        XCTAssertEqual(other.value(for: "x-filler"), String(repeating: "b", count: 69))
    }

    /// A block of many fields is kept whole and in order.
    func testALargeHeaderBlockIsKeptWhole() throws {
        var parser = ResponseHeaderParser()
        _ = parser.feed("HTTP/1.1 200 OK\r\n")
        for index in 0..<400 {
            XCTAssertEqual(parser.feed("X-Field-\(index): \(String(repeating: "v", count: index % 90))\(index)\r\n"), .none)
        }
        XCTAssertEqual(parser.feed("\r\n"), .headComplete)
        let fields = parser.head(url: try XCTUnwrap(URL(string: "http://h/"))).fields
        XCTAssertEqual(fields.count, 400)
        for (index, field) in fields.enumerated() {
            XCTAssertEqual(field.name, "X-Field-\(index)")
            XCTAssertEqual(field.value, String(repeating: "v", count: index % 90) + "\(index)")
        }
    }

    func testCurlCodesMapToFoundationCodes() {
        let table: [(CURLcode, URLError.Code)] = [
            (CURLE_COULDNT_RESOLVE_HOST, .cannotFindHost), (CURLE_COULDNT_CONNECT, .cannotConnectToHost),
            (CURLE_OPERATION_TIMEDOUT, .timedOut), (CURLE_PARTIAL_FILE, .networkConnectionLost),
            (CURLE_RECV_ERROR, .networkConnectionLost), (CURLE_TOO_MANY_REDIRECTS, .httpTooManyRedirects),
            (CURLE_URL_MALFORMAT, .badURL), (CURLE_UNSUPPORTED_PROTOCOL, .unsupportedURL),
            (CURLE_PEER_FAILED_VERIFICATION, .serverCertificateUntrusted),
            (CURLE_SSL_CONNECT_ERROR, .secureConnectionFailed), (CURLE_ABORTED_BY_CALLBACK, .cancelled),
        ]
        for (code, expected) in table {
            XCTAssertEqual(TransportError.urlErrorCode(for: code), expected, "CURLcode \(code.rawValue)")
        }
        let error = TransportError.fromCurl(CURLE_COULDNT_CONNECT, message: "Connection refused", url: URL(string: "http://h/"))
        XCTAssertEqual(error.userInfo[CurlErrorCodeKey] as? Int, 7)
        XCTAssertEqual(error.userInfo[CurlErrorMessageKey] as? String, "Connection refused")
        XCTAssertEqual(error.userInfo[NSURLErrorFailingURLErrorKey] as? URL, URL(string: "http://h/"))
    }
}

extension ResponseHeaderParser {
    /// Feeds `line` as curl would hand it over.
    mutating func feed(_ line: String) -> ResponseHeaderParser.Event {
        Array(line.utf8).withUnsafeBytes { consume($0) }
    }
}
