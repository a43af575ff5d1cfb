import Foundation
@testable import OperationNetworking
import OperationNetworkingTestServer
import XCTest

/// An `OutputStream` may take fewer bytes than it was offered (a pipe or a socket under pressure
/// does): every path that writes a body to the caller's stream keeps writing until all of it is in.
final class OutputStreamWriteTests: ServerTestCase {
    func testADownloadToAStreamTakingOneByteAtATimeIsExact() {
        let stream = OneByteOutputStream()
        let operation = HTTPRequestOperation(request: request("/bytes/200000"))
        operation.outputStream = stream
        XCTAssertTrue(run(operation).isSuccess)
        XCTAssertEqual(stream.written, deterministicBytes(200_000))
        XCTAssertEqual(stream.writeCalls, 200_000)
    }

    /// A 3xx the redirect block declines is delivered from the body set aside while it was decided.
    func testAnUnfollowedRedirectsBodyReachesAStreamTakingOneByteAtATime() {
        let body = String(repeating: "moved elsewhere; ", count: 100)
        let query = "location=/echo&body=\(body.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        let stream = OneByteOutputStream()
        let operation = HTTPRequestOperation(request: request("/status/302?\(query)"))
        operation.setRedirectResponseBlock { _, _, _ in nil }
        operation.responseSerializer.acceptableStatusCodes = nil
        operation.outputStream = stream
        let outcome = run(operation)
        XCTAssertNil(outcome.error)
        XCTAssertEqual(operation.response?.statusCode, 302)
        XCTAssertEqual(stream.written, Data(body.utf8))
    }

    /// A stream that takes nothing more, and has no error to report, fails the operation — it must not
    /// crash the network thread asking corelibs for the error it does not have.
    func testAStreamThatStopsTakingBytesFailsTheOperation() {
        let stream = OneByteOutputStream(capacity: 1_000)
        let operation = HTTPRequestOperation(request: request("/bytes/5000"))
        operation.outputStream = stream
        XCTAssertEqual(run(operation).urlErrorCode, .cannotWriteToFile)
        XCTAssertEqual(stream.written, deterministicBytes(1_000))
    }

    func testWriteAllStopsAtAStreamThatTakesNothing() {
        var storage = [UInt8](repeating: 0, count: 4)
        let full = OutputStream(toBuffer: &storage, capacity: 4)
        full.open()
        defer { full.close() }
        XCTAssertTrue(Data("abcd".utf8).withUnsafeBytes { full.writeAll($0) })
        XCTAssertFalse(Data("e".utf8).withUnsafeBytes { full.writeAll($0) }, "a full buffer takes 0 bytes")
    }
}

/// Takes one byte per `write` call, up to `capacity`, then nothing, and keeps what it was given; it
/// leaves `streamError` to corelibs, as many subclasses do. Written on the network thread, read by
/// the test after the operation finished; every stored var is guarded by `lock`.
private final class OneByteOutputStream: OutputStream {
    private let capacity: Int
    private let lock = NSLock()
    private var bytes = Data()   // guarded by lock
    private var calls = 0   // guarded by lock
    private var status: Stream.Status = .notOpen   // guarded by lock

    init(capacity: Int = .max) {
        self.capacity = capacity
        super.init(toMemory: ())
    }

    required init(toMemory: ()) {
        capacity = .max
        super.init(toMemory: ())
    }

    var written: Data { lock.withLock { bytes } }
    var writeCalls: Int { lock.withLock { calls } }

    override func open() { lock.withLock { status = .open } }
    override func close() { lock.withLock { status = .closed } }
    override var streamStatus: Stream.Status { lock.withLock { status } }
    override var hasSpaceAvailable: Bool { true }

    override func write(_ buffer: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        lock.withLock {
            guard length > 0, bytes.count < capacity else { return 0 }
            bytes.append(buffer.pointee)
            calls += 1
            return 1
        }
    }
}
