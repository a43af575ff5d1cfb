import Foundation
@testable import OperationNetworking
import XCTest

/// `dump`, `String(describing:)` and `String(reflecting:)` of a manager or an operation never show a
/// credential's password: corelibs' `URLCredential` reflects its password, and apps log these.
final class ReflectionSecretTests: LibraryTestCase {
    private let password = "reflected-PASSWORD-\(UInt32.random(in: 0...UInt32.max))"
    private let proxyPassword = "proxy-PASSWORD-\(UInt32.random(in: 0...UInt32.max))"

    private func texts(of value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        return [dumped, String(describing: value), String(reflecting: value)]
    }

    func testNoReflectionOfAManagerOrAnOperationShowsAPassword() throws {
        let manager = HTTPRequestOperationManager(baseURL: URL(string: "https://example.invalid/"))
        manager.credential = URLCredential(user: "ada", password: password, persistence: .none)
        manager.proxyCredential = URLCredential(user: "proxy-user", password: proxyPassword, persistence: .none)
        let operation = HTTPRequestOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "https://example.invalid/x"))))
        operation.credential = manager.credential
        operation.proxyCredential = manager.proxyCredential
        for text in texts(of: manager) + texts(of: operation) {
            XCTAssertFalse(text.contains(password), text)
            XCTAssertFalse(text.contains(proxyPassword), text)
        }
        var dumped = ""
        dump(operation, to: &dumped)
        XCTAssertTrue(dumped.contains("ada"), "the user is still shown:\n\(dumped)")
    }
}
