import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import OperationNetworking
import XCTest

/// Values for the cache's pure tests: requests, stored responses and HTTP dates around one moment.
enum CacheFixture {
    /// The moment the tests count from.
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let urlString = "https://example.com/resource"

    static func url(_ string: String = urlString) throws -> URL {
        try XCTUnwrap(URL(string: string))
    }

    /// `date` as an IMF-fixdate.
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// A request as the cache sees it.
    static func request(_ headers: [String: String] = [:], policy: URLRequest.CachePolicy = .useProtocolCachePolicy,
                        method: String = "GET", url: String = urlString) throws -> CacheRequest {
        try XCTUnwrap(CacheRequest(try urlRequest(headers, policy: policy, method: method, url: url)))
    }

    /// A request as the operation holds it.
    static func urlRequest(_ headers: [String: String] = [:], policy: URLRequest.CachePolicy = .useProtocolCachePolicy,
                           method: String = "GET", url: String = urlString) throws -> URLRequest {
        var request = URLRequest(url: try self.url(url))
        request.httpMethod = method
        request.cachePolicy = policy
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// An HTTP response.
    static func response(_ status: Int = 200, _ headers: [String: String], url: String = urlString) throws -> HTTPURLResponse {
        try XCTUnwrap(HTTPURLResponse(url: try self.url(url), statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers))
    }

    /// A stored response received at `received` (requested at the same moment) with `Date: received`
    /// unless `headers` say otherwise.
    static func stored(_ status: Int = 200, _ headers: [String: String], received: Date = t0, body: String = "stored body",
                       varying: [String: String] = [:], url: String = urlString) throws -> StoredResponse {
        var fields = headers
        if fields.headerValue("Date") == nil { fields["Date"] = httpDate(received) }
        return StoredResponse(url: try XCTUnwrap(URL(string: url)), statusCode: status, headers: fields, body: Data(body.utf8),
                              varyingRequestHeaders: varying, requestTime: received, responseTime: received)
    }

    /// A whole response as the transfer received it.
    static func received(_ status: Int = 200, _ headers: [String: String], body: String? = "new body", at moment: Date = t0,
                         url: String = urlString, finalRequest: CacheRequest? = nil,
                         fits: Bool = true) throws -> CacheState.Received {
        var fields = headers
        if fields.headerValue("Date") == nil { fields["Date"] = httpDate(moment) }
        return CacheState.Received(url: try XCTUnwrap(URL(string: url)), statusCode: status, headers: fields,
                                   body: body.map { Data($0.utf8) }, finalRequest: finalRequest, fitsCache: fits,
                                   requestTime: moment, responseTime: moment)
    }
}
