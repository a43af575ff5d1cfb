import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Tool) @testable import OperationNetworking
import XCTest

/// The shared cache's home follows the XDG rules: `$XDG_CACHE_HOME` when absolute, else `$HOME/.cache`
/// when absolute, and only then the password database's home.
final class SharedCacheHomeTests: LibraryTestCase {
    private func directory(_ environment: [String: String]) -> String {
        SharedCacheLocation.directory(environment: environment, processName: "my/app", passwordHome: { "/from/passwd" }).path
    }

    func testXDGCacheHomeThenHomeThenThePasswordDatabase() {
        let tail = "org.operationnetworking.URLCache/my_app"
        XCTAssertEqual(directory(["XDG_CACHE_HOME": "/xdg", "HOME": "/home/me"]), "/xdg/\(tail)")
        XCTAssertEqual(directory(["XDG_CACHE_HOME": "relative", "HOME": "/home/me"]), "/home/me/.cache/\(tail)")
        XCTAssertEqual(directory(["XDG_CACHE_HOME": "", "HOME": "/home/me"]), "/home/me/.cache/\(tail)")
        XCTAssertEqual(directory(["HOME": "/home/me"]), "/home/me/.cache/\(tail)")
        XCTAssertEqual(directory(["HOME": "relative"]), "/from/passwd/.cache/\(tail)")
        XCTAssertEqual(directory([:]), "/from/passwd/.cache/\(tail)")
    }

    func testThePasswordDatabaseHomeIsTheEffectiveUsers() {
        guard let entry = getpwuid(geteuid()), let home = entry.pointee.pw_dir else {
            return XCTFail("no password entry for uid \(geteuid())")
        }
        XCTAssertEqual(SharedCacheLocation.passwordDatabaseHome(), String(cString: home))
    }
}
