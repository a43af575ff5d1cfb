import Foundation
@testable import OperationNetworking
import XCTest

/// HTTP, JSON and property-list request serializers.
final class RequestSerializerTests: LibraryTestCase {
    private let url = "http://example.com/resource"

    func testRequestPropertiesApplyOnlyWhenSet() throws {
        let serializer = HTTPRequestSerializer()
        let plain = try serializer.request(method: "GET", urlString: url, parameters: nil)
        XCTAssertEqual(plain.timeoutInterval, 60)
        XCTAssertEqual(plain.cachePolicy, .useProtocolCachePolicy)
        XCTAssertTrue(plain.httpShouldHandleCookies)
        serializer.timeoutInterval = 5
        serializer.cachePolicy = .reloadIgnoringLocalCacheData
        serializer.httpShouldHandleCookies = false
        serializer.allowsCellularAccess = false
        let changed = try serializer.request(method: "GET", urlString: url, parameters: nil)
        XCTAssertEqual(changed.timeoutInterval, 5)
        XCTAssertEqual(changed.cachePolicy, .reloadIgnoringLocalCacheData)
        XCTAssertFalse(changed.httpShouldHandleCookies)
        XCTAssertFalse(changed.allowsCellularAccess)
        XCTAssertEqual(serializer.timeoutInterval, 5)
    }

    func testDefaultHeaders() throws {
        let serializer = HTTPRequestSerializer()
        let agent = try XCTUnwrap(serializer.value(forHTTPHeaderField: "User-Agent"))
        XCTAssertTrue(agent.contains(" OperationNetworking/"), agent)
        XCTAssertTrue(agent.contains(" libcurl/7.") || agent.contains(" libcurl/8."), agent)
        XCTAssertTrue(agent.hasPrefix(ProcessInfo.processInfo.processName + " ("), agent)
        let language = try XCTUnwrap(serializer.value(forHTTPHeaderField: "Accept-Language"))
        XCTAssertTrue(language.contains(";q=1"), language)
    }

    func testHeadersAndBasicAuthorization() throws {
        let serializer = HTTPRequestSerializer()
        serializer.setValue("v", forHTTPHeaderField: "X-Custom")
        serializer.setAuthorizationHeaderField(username: "username", password: "password")
        XCTAssertEqual(serializer.value(forHTTPHeaderField: "Authorization"), "Basic dXNlcm5hbWU6cGFzc3dvcmQ=")
        var own = URLRequest(url: try XCTUnwrap(URL(string: url)))
        own.setValue("mine", forHTTPHeaderField: "X-Custom")
        let merged = try serializer.request(bySerializing: own, withParameters: nil)
        XCTAssertEqual(merged.value(forHTTPHeaderField: "X-Custom"), "mine", "the request's own value wins")
        XCTAssertEqual(merged.value(forHTTPHeaderField: "Authorization"), "Basic dXNlcm5hbWU6cGFzc3dvcmQ=")
        serializer.clearAuthorizationHeader()
        XCTAssertNil(serializer.httpRequestHeaders["Authorization"])
    }

    func testParametersGoToTheQueryOrTheBody() throws {
        let serializer = HTTPRequestSerializer()
        XCTAssertEqual(try serializer.request(method: "GET", urlString: url, parameters: ["a": "1"]).url?.absoluteString,
                       "http://example.com/resource?a=1")
        XCTAssertEqual(try serializer.request(method: "GET", urlString: url + "?x=0", parameters: ["a": "1"]).url?.absoluteString,
                       "http://example.com/resource?x=0&a=1")
        XCTAssertEqual(try serializer.request(method: "GET", urlString: url, parameters: [String: Any]()).url?.absoluteString,
                       "http://example.com/resource?")
        let post = try serializer.request(method: "POST", urlString: url, parameters: nil)
        XCTAssertEqual(post.value(forHTTPHeaderField: "Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(post.httpBody, Data())
        serializer.httpMethodsEncodingParametersInURI = ["GET", "HEAD", "DELETE", "POST"]
        XCTAssertEqual(try serializer.request(method: "POST", urlString: url, parameters: ["b": "2"]).url?.query, "b=2")
    }

    func testCustomQueryBlockAndItsError() throws {
        let serializer = HTTPRequestSerializer()
        serializer.setQueryStringSerialization { _, _ in "custom=1" }
        XCTAssertEqual(try serializer.request(method: "GET", urlString: url, parameters: ["a": 1]).url?.query, "custom=1")
        struct Refused: Error {}
        serializer.setQueryStringSerialization { _, _ in throw Refused() }
        XCTAssertThrowsError(try serializer.request(method: "GET", urlString: url, parameters: ["a": 1])) {
            XCTAssertTrue($0 is Refused)
        }
        serializer.queryStringSerializationStyle = .default
        XCTAssertEqual(try serializer.request(method: "GET", urlString: url, parameters: ["a": 1]).url?.query, "a=1")
    }

    func testInvalidURLAndHeaderInjectionThrow() {
        let serializer = HTTPRequestSerializer()
        XCTAssertThrowsError(try serializer.request(method: "GET", urlString: "not a url", parameters: nil))
        serializer.setValue("x\ny", forHTTPHeaderField: "X-Bad")
        XCTAssertThrowsError(try serializer.request(method: "GET", urlString: url, parameters: nil))
        serializer.setValue(nil, forHTTPHeaderField: "X-Bad")
        serializer.setValue("v", forHTTPHeaderField: "Bad\0Name")
        XCTAssertThrowsError(try serializer.request(method: "GET", urlString: url, parameters: nil))
    }

    func testJSONRequestSerializer() throws {
        let serializer = JSONRequestSerializer()
        serializer.writingOptions = [.sortedKeys]
        let post = try serializer.request(method: "POST", urlString: url, parameters: ["b": [1, 2], "a": "x/y"])
        XCTAssertEqual(post.value(forHTTPHeaderField: "Content-Type"), "application/json")
        XCTAssertEqual(String(decoding: post.httpBody ?? Data(), as: UTF8.self), #"{"a":"x\/y","b":[1,2]}"#)
        let get = try serializer.request(method: "GET", urlString: url, parameters: ["a": "1"])
        XCTAssertEqual(get.url?.query, "a=1")
        XCTAssertNil(get.httpBody)
        XCTAssertThrowsError(try serializer.request(method: "POST", urlString: url, parameters: ["when": Date()])) {
            XCTAssertEqual(($0 as NSError).domain, RequestSerializationErrorDomain)
        }
        XCTAssertThrowsError(try serializer.request(method: "POST", urlString: url, parameters: "bare string"))
        let none = try serializer.request(method: "POST", urlString: url, parameters: nil)
        XCTAssertNil(none.httpBody)
    }

    func testPropertyListRequestSerializer() throws {
        let serializer = PropertyListRequestSerializer()
        let post = try serializer.request(method: "PUT", urlString: url, parameters: ["n": 1, "s": "v"])
        XCTAssertEqual(post.value(forHTTPHeaderField: "Content-Type"), "application/x-plist")
        let decoded = try PropertyListSerialization.propertyList(from: post.httpBody ?? Data(), format: nil) as? [String: Any]
        XCTAssertEqual(decoded?["s"] as? String, "v")
        XCTAssertThrowsError(try serializer.request(method: "POST", urlString: url, parameters: ["bad": NSObject()]))
        serializer.format = .binary
        let binary = try serializer.request(method: "POST", urlString: url, parameters: ["n": 1])
        XCTAssertEqual(binary.httpBody?.prefix(6), Data("bplist".utf8))
    }

    func testCopiesAndArchivesKeepEverySetting() throws {
        let serializer = JSONRequestSerializer()
        serializer.setValue("v", forHTTPHeaderField: "X-Custom")
        serializer.timeoutInterval = 7
        serializer.cachePolicy = .returnCacheDataElseLoad
        serializer.httpMethodsEncodingParametersInURI = ["GET"]
        serializer.writingOptions = [.prettyPrinted]
        serializer.stringEncoding = .isoLatin1
        let copy = try XCTUnwrap(serializer.copy() as? JSONRequestSerializer)
        let archived = try NSKeyedArchiver.archivedData(withRootObject: serializer, requiringSecureCoding: true)
        let restored = try XCTUnwrap(NSKeyedUnarchiver.unarchivedObject(ofClass: JSONRequestSerializer.self, from: archived))
        for candidate in [copy, restored] {
            XCTAssertEqual(candidate.value(forHTTPHeaderField: "X-Custom"), "v")
            XCTAssertEqual(candidate.timeoutInterval, 7)
            XCTAssertEqual(candidate.cachePolicy, .returnCacheDataElseLoad)
            XCTAssertEqual(candidate.httpMethodsEncodingParametersInURI, ["GET"])
            XCTAssertEqual(candidate.writingOptions, [.prettyPrinted])
            XCTAssertEqual(candidate.stringEncoding, .isoLatin1)
            XCTAssertEqual(try candidate.request(method: "GET", urlString: url, parameters: nil).timeoutInterval, 7)
        }
        copy.setValue("changed", forHTTPHeaderField: "X-Custom")
        XCTAssertEqual(serializer.value(forHTTPHeaderField: "X-Custom"), "v", "a copy shares no state")
        let plist = PropertyListRequestSerializer()
        plist.format = .binary
        let plistArchive = try NSKeyedArchiver.archivedData(withRootObject: plist, requiringSecureCoding: true)
        XCTAssertEqual(try NSKeyedUnarchiver.unarchivedObject(ofClass: PropertyListRequestSerializer.self, from: plistArchive)?.format, .binary)
    }
}
