import Foundation
@testable import OperationNetworking
import XCTest

/// The attempt and hop lifetimes of a `Transfer`, no curl and no server: a retry starts from a fresh
/// `Attempt` and the next request from a fresh `Hop`, and nothing of the previous one leaks into it.
///
/// Each test first gives every field of the old value something a fresh value does not have (and
/// checks it did, so a field added later must be covered here too), then compares every field of the
/// new value with a fresh one.
final class TransferLifetimeTests: LibraryTestCase {
    private let original = URLRequest(url: URL(string: "http://origin.test/start")!)

    private func makeTransfer(retryPolicy: RetryPolicy = .none) -> Transfer {
        Transfer(request: original, outputStream: nil, resumeFrom: nil, initialBody: Data(),
                 retryPolicy: retryPolicy, delegate: TransferOutcomeRecorder(XCTestExpectation(description: "never waited for: these transfers never reach a network thread")))
    }

    /// Each stored field of `value`, by name, as text.
    private func fields(of value: Any) -> [String: String] {
        var fields: [String: String] = [:]
        for child in Mirror(reflecting: value).children {
            guard let label = child.label else { continue }
            fields[label] = String(describing: child.value)
        }
        return fields
    }

    /// Every field of `used` differs from `fresh` (but those in `except`), so a leak would show.
    private func assertEveryFieldUsed(_ used: Any, fresh: Any, except: Set<String>,
                                      file: StaticString = #filePath, line: UInt = #line) {
        let usedFields = fields(of: used), freshFields = fields(of: fresh)
        XCTAssertEqual(Set(usedFields.keys), Set(freshFields.keys), file: file, line: line)
        for (name, value) in usedFields where !except.contains(name) {
            XCTAssertNotEqual(value, freshFields[name], "the old value's \(name) is set", file: file, line: line)
        }
    }

    private func assertSameFields(_ value: Any, _ fresh: Any, _ what: String,
                                  file: StaticString = #filePath, line: UInt = #line) {
        let got = fields(of: value), expected = fields(of: fresh)
        XCTAssertFalse(expected.isEmpty, file: file, line: line)
        for (name, value) in expected {
            XCTAssertEqual(got[name], value, "\(what): \(name) is a fresh value's", file: file, line: line)
        }
    }

    func testTheNextAttemptStartsFromAFreshAttempt() {
        let transfer = makeTransfer()
        let redirected = URL(string: "http://elsewhere.test/moved")!
        transfer.current.request.url = redirected
        transfer.current.head = ResponseHead(url: redirected, statusCode: 503, httpVersion: "HTTP/1.1",
                                             fields: [(name: "Retry-After", value: "1")])
        transfer.current.body = Data("old body".utf8)
        transfer.current.bytesReceived = 8
        transfer.current.expectedBodyLength = 8
        transfer.current.bytesToSkip = 3
        transfer.current.rangeBase = 100
        transfer.current.redirectCount = 2
        transfer.current.challengeRounds = 1
        transfer.current.serverCredential = TransferCredential(user: "u", password: "p", schemes: 1)
        transfer.current.proxyCredential = TransferCredential(user: "pu", password: "pp", schemes: 2)
        transfer.current.abortError = URLError(.networkConnectionLost)
        transfer.current.abortIsFinal = true
        assertEveryFieldUsed(transfer.current, fresh: Transfer.Attempt(number: 1, request: original), except: ["number", "easy"])

        _ = transfer.state.takeIn()
        _ = transfer.state.admit()
        _ = transfer.delay(for: 0, now: 0)
        XCTAssertTrue(transfer.beginNextAttempt(now: 0))

        XCTAssertEqual(transfer.attempt, 2)
        XCTAssertEqual(transfer.state.phase, .waiting)
        assertSameFields(transfer.current, Transfer.Attempt(number: 2, request: original), "attempt 2")
    }

    func testAWakeUpAfterTheTransferEndedStartsNoAttempt() {
        let transfer = makeTransfer()
        _ = transfer.state.takeIn()
        _ = transfer.state.admit()
        _ = transfer.delay(for: 5, now: 0)
        XCTAssertNotNil(transfer.finish())
        transfer.current.redirectCount = 3
        XCTAssertFalse(transfer.beginNextAttempt(now: 0))
        XCTAssertEqual(transfer.attempt, 1)
        XCTAssertEqual(transfer.current.redirectCount, 3)
        XCTAssertNil(transfer.finish(), "the delegate is handed back once")
    }

    func testTheNextHopStartsFromAFreshHop() throws {
        let transfer = makeTransfer()
        transfer.beginHop(Transfer.Hop(url: URL(string: "https://old.test/a")!, handlesCookies: false,
                                       tlsOrigin: "old.test:443", asksForEncodings: false, startTime: 1,
                                       socket: UnixSocketRoute(socketPath: "/run/old.sock", url: URL(string: "https://old.test/a")!)))
        transfer.hop.classify(as: .redirect)
        transfer.hop.lastActivity = 2
        let status = Array("HTTP/1.1 302 Found\r\n".utf8)
        _ = status.withUnsafeBytes { transfer.hop.headerParser.consume($0) }
        transfer.hop.decoder = ContentDecoder(contentEncoding: "gzip")
        transfer.hop.setAsideBody = Data("moved".utf8)
        transfer.hop.droppedOnResend = ["If-None-Match"]
        transfer.hop.requiredBodyEnd = 10
        transfer.hop.callerRange = .bytes(start: 5, end: nil)
        transfer.hop.sentRange = true
        transfer.hop.tunnelAnswer = .refused(status: 403)
        transfer.hop.pinsCertificates = true
        transfer.hop.upload = UploadSource(data: Data("body".utf8))
        transfer.hop.bytesSent = 4
        transfer.hop.requestHeadBytesAtBody = 80
        transfer.hop.socketOpenError = EMFILE

        let request = URLRequest(url: URL(string: "http://next.test/b")!)
        let fresh = try transfer.makeHop(for: request, now: 7)
        assertEveryFieldUsed(transfer.hop, fresh: fresh, except: ["trustStore"])
        transfer.beginHop(try transfer.makeHop(for: request, now: 7))

        assertSameFields(transfer.hop, fresh, "the next hop")
        XCTAssertEqual(transfer.hop.kind, .awaitingHead)
        XCTAssertNil(transfer.tlsOrigin)
    }

    func testAHopIsMadeOnlyForAnHTTPRequestWithAHost() {
        let transfer = makeTransfer()
        XCTAssertThrowsError(try transfer.makeHop(for: URLRequest(url: URL(string: "ftp://files.test/x")!), now: 0))
        XCTAssertThrowsError(try transfer.makeHop(for: URLRequest(url: URL(string: "http:///nohost")!), now: 0))
        var bad = URLRequest(url: URL(string: "http://a.test/")!)
        bad.httpMethod = "GET\r\nX-Injected: 1"
        XCTAssertThrowsError(try transfer.makeHop(for: bad, now: 0))
        XCTAssertEqual(try transfer.makeHop(for: URLRequest(url: URL(string: "https://A.test/x")!), now: 0).tlsOrigin, "a.test:443")
    }

    /// A hop spells its origin as the network thread does for a request it holds back, so the two meet.
    func testAHopsOriginIsSpelledAsTheNetworkThreadSpellsIt() throws {
        let transfer = makeTransfer()
        for text in ["https://A.test:8443/x", "https://[::1]:9000/", "https://ex%41mple.test/", "http://plain.test/"] {
            let url = try XCTUnwrap(URL(string: text))
            XCTAssertEqual(try transfer.makeHop(for: URLRequest(url: url), now: 0).tlsOrigin, Transfer.tlsOrigin(of: url), text)
        }
        XCTAssertEqual(Transfer.tlsOrigin(of: URL(string: "https://A.test:8443/x")), "a.test:8443")
    }

    /// Names and methods are compared without regard to ASCII case.
    func testAHopReadsTheMethodAndAcceptEncodingInAnyCase() throws {
        let transfer = makeTransfer()
        var request = URLRequest(url: try XCTUnwrap(URL(string: "http://a.test/")))
        request.httpMethod = "get"
        XCTAssertTrue(try transfer.makeHop(for: request, now: 0).asksForEncodings)
        request.setValue("identity", forHTTPHeaderField: "ACCEPT-encoding")
        XCTAssertFalse(try transfer.makeHop(for: request, now: 0).asksForEncodings, "the caller's own Accept-Encoding")
        request.setValue("en", forHTTPHeaderField: "Accept-Language")   // as long as Accept-Encoding
        request.setValue(nil, forHTTPHeaderField: "ACCEPT-encoding")
        XCTAssertTrue(try transfer.makeHop(for: request, now: 0).asksForEncodings)
        XCTAssertTrue(asciiCaseInsensitiveEquals("Content-TYPE", "content-type"))
        XCTAssertFalse(asciiCaseInsensitiveEquals("Content-Type", "Content-Typf"))
        XCTAssertFalse(asciiCaseInsensitiveEquals("é", "É"), "only ASCII letters fold")
    }
}
