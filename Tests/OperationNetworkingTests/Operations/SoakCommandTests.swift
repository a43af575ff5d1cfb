import Foundation
import XCTest

/// `onet soak` runs mixed operations against its own loopback server and passes only when every
/// operation called exactly one handler and descriptors did not grow.
final class SoakCommandTests: ServerTestCase {
    func testASoakRunPassesAndReportsItsResources() throws {
        let (status, output) = try runOnet(["soak", "--operations", "2000", "--checkpoints", "1000,2000"])
        XCTAssertEqual(status, 0, output)
        let lines = output.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.hasPrefix("ops=") }.count, 2, output)
        XCTAssertTrue(lines.contains { $0.hasPrefix("ops=2000 handlers=2000 succeeded=1400 ") }, output)
        XCTAssertTrue(lines.last?.hasPrefix("soak: PASS operations=2000 handlers_not_once=0") ?? false, output)
    }
}
