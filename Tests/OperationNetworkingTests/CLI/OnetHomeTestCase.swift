import Foundation
import XCTest

/// A test case whose `onet` runs get a home folder of their own (httpie-style sessions and
/// corelibs' cookie files live under it): the test's temporary directory.
class OnetHomeTestCase: TemporaryDirectoryTestCase {
    var home: URL { directory }

    /// The test server's URL for `path`, as text.
    func url(_ path: String) -> String { server.url(path).absoluteString }
}
