import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// br and zstd bodies, like gzip ones, are offered, decoded by the library and checked to their end:
/// a stream cut short or damaged fails with `.cannotDecodeContentData`, and a decompression bomb stops
/// at `maximumResponseSize`.
final class ContentEncodingTests: ServerTestCase {
    private static let encodings = ["brotli": "br", "zstd": "zstd"]

    private func operation(_ path: String, limit: Int64? = nil) -> HTTPRequestOperation {
        let operation = HTTPRequestOperation(request: request(path))
        operation.maximumResponseSize = limit
        return operation
    }

    func testEveryDecodedEncodingIsOffered() throws {
        XCTAssertTrue(run(request("/echo")).1.isSuccess)
        let offered = try XCTUnwrap(server.requests.first?.header("Accept-Encoding"))
        XCTAssertEqual(offered, "gzip, deflate, br, zstd")
    }

    func testBodiesAreDecodedAcrossManyOutputPieces() {
        // A megabyte from a few hundred compressed bytes: many 64 KiB decoding steps per arriving piece.
        for (route, coding) in ContentEncodingTests.encodings {
            let operation = operation("/\(route)/1000000")
            XCTAssertTrue(run(operation).isSuccess, route)
            XCTAssertEqual(operation.response?.value(forHTTPHeaderField: "Content-Encoding"), coding)
            XCTAssertEqual(operation.responseData, deterministicBytes(1_000_000), route)
        }
    }

    func testBodiesArrivingAByteAtATimeAreDecoded() {
        for route in ContentEncodingTests.encodings.keys {
            let operation = operation("/\(route)/300000?chunkSize=1")
            XCTAssertTrue(run(operation).isSuccess, route)
            XCTAssertEqual(operation.responseData, deterministicBytes(300_000), route)
        }
    }

    func testAStreamCutShortOnAMatchingLengthCannotBeDecoded() {
        for route in ContentEncodingTests.encodings.keys {
            for cut in [1, 30] {
                let outcome = run(operation("/\(route)/100000?cut=\(cut)"))
                XCTAssertEqual(outcome.urlErrorCode, .cannotDecodeContentData, "\(route), \(cut) bytes short: \(String(describing: outcome.error))")
            }
        }
    }

    func testADamagedStreamCannotBeDecoded() {
        for route in ContentEncodingTests.encodings.keys {
            let outcome = run(operation("/\(route)/100000?damage=1"))
            XCTAssertEqual(outcome.urlErrorCode, .cannotDecodeContentData, "\(route): \(String(describing: outcome.error))")
        }
    }

    func testADecompressionBombStopsAtTheLimit() {
        for route in ContentEncodingTests.encodings.keys {
            // 64 MiB of zeros, a few kilobytes on the wire.
            let bomb = operation("/\(route)/67108864?zeros=1", limit: 1_000_000)
            let progress = Recorder<Int64>()
            bomb.setDownloadProgressBlock { _, total, _ in progress.append(total) }
            XCTAssertEqual(run(bomb).urlErrorCode, .dataLengthExceedsMaximum, route)
            XCTAssertNil(bomb.responseData, route)
            XCTAssertLessThanOrEqual(progress.all.max() ?? 0, 1_000_000, route)
            let roomy = operation("/\(route)/2000000?zeros=1", limit: 2_000_000)
            XCTAssertTrue(run(roomy).isSuccess, route)
            XCTAssertEqual(roomy.responseData, Data(count: 2_000_000), route)
        }
    }

    func testACallerAcceptEncodingGetsTheBodyAsSent() {
        var request = request("/zstd/1000")
        request.setValue("zstd", forHTTPHeaderField: "Accept-Encoding")
        let (operation, outcome) = run(request)
        XCTAssertTrue(outcome.isSuccess)
        // A zstd frame starts with its magic number, 0xFD2FB528 little-endian.
        XCTAssertEqual(operation.responseData?.prefix(4), Data([0x28, 0xB5, 0x2F, 0xFD]))
    }
}
