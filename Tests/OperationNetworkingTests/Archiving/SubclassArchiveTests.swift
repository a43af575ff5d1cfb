import Foundation
import OperationNetworking
import XCTest

/// An app's manager subclass, configured by its initializer (as `APIClient` in Migration.md).
final class ArchivedAPIClient: HTTPRequestOperationManager, @unchecked Sendable {   // no state of its own
    required init(baseURL: URL?) {
        super.init(baseURL: baseURL ?? URL(string: "https://api.example.com/v1/"))
        requestSerializer.setValue("api-client", forHTTPHeaderField: "X-Client")
    }
}

/// An app's response serializer with a setting of its own, archived and copied with the others.
final class EnvelopeResponseSerializer: JSONResponseSerializer, @unchecked Sendable {   // every access goes through `settingsLock`
    private let settingsLock = NSLock()
    private var storedEnvelopeKey = "data"   // guarded by settingsLock

    /// The key of the envelope the payload sits under.
    var envelopeKey: String {
        get { settingsLock.withLock { storedEnvelopeKey } }
        set { settingsLock.withLock { storedEnvelopeKey = newValue } }
    }

    required init() {
        super.init()
    }

    required init?(coder: NSCoder) {
        super.init(coder: coder)
        if let key = coder.decodeObject(of: NSString.self, forKey: "envelopeKey") { envelopeKey = key as String }
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(envelopeKey as NSString, forKey: "envelopeKey")
    }

    override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        (copy as? EnvelopeResponseSerializer)?.envelopeKey = envelopeKey
        return copy
    }
}

/// An operation subclass that archives a key of its own through the `encode(with:)` /
/// `restore(from:)` pair.
final class TaggedOperation: HTTPRequestOperation, @unchecked Sendable {   // every access goes through `tagLock`
    private let tagLock = NSLock()
    private var storedTag = ""   // guarded by tagLock

    /// A label the app keeps with the download.
    var tag: String {
        get { tagLock.withLock { storedTag } }
        set { tagLock.withLock { storedTag = newValue } }
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(tag as NSString, forKey: "tag")
    }

    override func restore(from coder: NSCoder) {
        super.restore(from: coder)
        if let tag = coder.decodeObject(of: NSString.self, forKey: "tag") { self.tag = tag as String }
    }
}

/// Archives of app subclasses: `SafeArchive.unarchive` accepts the requested class itself and the
/// classes the caller allows, and still refuses every other class before the unarchiver sees it.
final class SubclassArchiveTests: LibraryTestCase {
    private enum Outer {
        final class Nested: NSObject, NSSecureCoding {
            static var supportsSecureCoding: Bool { true }
            override init() { super.init() }
            init?(coder: NSCoder) { super.init() }
            func encode(with coder: NSCoder) {}
        }
    }

    func testAManagerSubclassIsRestoredAndCopiedAsItself() throws {
        let client = ArchivedAPIClient()
        client.requestSerializer.setValue("kept", forHTTPHeaderField: "X-Custom")
        let restored = try SafeArchive.unarchive(ArchivedAPIClient.self, from: try SafeArchive.archive(client))
        XCTAssertTrue(type(of: restored) == ArchivedAPIClient.self)
        XCTAssertEqual(restored.baseURL?.absoluteString, "https://api.example.com/v1/")
        XCTAssertEqual(restored.requestSerializer.value(forHTTPHeaderField: "X-Custom"), "kept")
        XCTAssertEqual(restored.requestSerializer.value(forHTTPHeaderField: "X-Client"), "api-client")
        let copy = try XCTUnwrap(restored.copy() as? ArchivedAPIClient)
        XCTAssertEqual(copy.requestSerializer.value(forHTTPHeaderField: "X-Custom"), "kept")
    }

    func testAManagerHoldingAnAppSerializerNeedsThatClassAllowed() throws {
        let manager = HTTPRequestOperationManager(baseURL: URL(string: "https://api.example.com/"))
        let serializer = EnvelopeResponseSerializer()
        serializer.envelopeKey = "result"
        serializer.removesKeysWithNullValues = true
        manager.responseSerializer = serializer
        let archive = try SafeArchive.archive(manager)

        XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: archive)) {
            XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.unexpectedClass.rawValue, "not allowed: refused, no crash")
        }
        // A class no archive can name (nested) is ignored in the allow-list, without a crash.
        XCTAssertThrowsError(try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: archive,
                                                       allowing: [Outer.Nested.self])) {
            XCTAssertEqual(($0 as NSError).code, ArchiveErrorCode.unexpectedClass.rawValue)
        }

        let restored = try SafeArchive.unarchive(HTTPRequestOperationManager.self, from: archive,
                                                 allowing: [EnvelopeResponseSerializer.self])
        let decoded = try XCTUnwrap(restored.responseSerializer as? EnvelopeResponseSerializer)
        XCTAssertEqual(decoded.envelopeKey, "result")
        XCTAssertTrue(decoded.removesKeysWithNullValues)
        let copied = try XCTUnwrap((restored.copy() as? HTTPRequestOperationManager)?.responseSerializer as? EnvelopeResponseSerializer)
        XCTAssertEqual(copied.envelopeKey, "result")
        XCTAssertFalse(copied === decoded, "the copy has its own serializer")
    }

    func testAResponseSerializerSubclassIsRestoredAsTheRoot() throws {
        let serializer = EnvelopeResponseSerializer()
        serializer.envelopeKey = "items"
        let restored = try SafeArchive.unarchive(EnvelopeResponseSerializer.self, from: try SafeArchive.archive(serializer))
        XCTAssertEqual(restored.envelopeKey, "items")
    }

    func testAnOperationSubclassRestoresItsOwnKey() throws {
        let operation = TaggedOperation(request: URLRequest(url: try XCTUnwrap(URL(string: "https://example.com/big.iso"))))
        operation.tag = "nightly"
        let restored = try SafeArchive.unarchive(TaggedOperation.self, from: try SafeArchive.archive(operation))
        XCTAssertEqual(restored.tag, "nightly")
        XCTAssertEqual(restored.request.url?.absoluteString, "https://example.com/big.iso")
    }
}
