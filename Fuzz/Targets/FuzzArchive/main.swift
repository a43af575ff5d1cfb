// Fuzzes SafeArchive.unarchive (and the BinaryPropertyListScanner it runs first) with damaged archives
// of every archivable class: the first input byte picks the class asked for, the rest is the archive.
// Seeds are real archives of a manager, operations, serializers and a policy, so mutations start from
// well-formed binary property lists.
//
// Invariants besides not crashing (corelibs' NSKeyedUnarchiver stops the process on many tampered
// archives; SafeArchive must refuse those with an error first): an archive SafeArchive accepts gives
// an object that archives again and restores again.
import FuzzSupport
import Foundation
@testable import OperationNetworking

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

private func attempt<T: NSObject & NSSecureCoding>(_ type: T.Type, _ data: Data) {
    guard let object = try? SafeArchive.unarchive(type, from: data) else { return }
    do {
        let again = try SafeArchive.archive(object)
        _ = try SafeArchive.unarchive(type, from: again)
    } catch {
        FuzzDriver.fail("an accepted archive of \(type) does not round-trip: \(error)")
    }
}

private func unarchive(as selector: UInt8, _ data: Data) {
    switch selector % 14 {
    case 0: attempt(HTTPRequestOperationManager.self, data)
    case 1: attempt(URLConnectionOperation.self, data)
    case 2: attempt(HTTPRequestOperation.self, data)
    case 3: attempt(HTTPRequestSerializer.self, data)
    case 4: attempt(JSONRequestSerializer.self, data)
    case 5: attempt(PropertyListRequestSerializer.self, data)
    case 6: attempt(HTTPResponseSerializer.self, data)
    case 7: attempt(JSONResponseSerializer.self, data)
    case 8: attempt(XMLParserResponseSerializer.self, data)
    case 9: attempt(XMLDocumentResponseSerializer.self, data)
    case 10: attempt(PropertyListResponseSerializer.self, data)
    case 11: attempt(ImageResponseSerializer.self, data)
    case 12: attempt(CompoundResponseSerializer.self, data)
    default: attempt(SecurityPolicy.self, data)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzArchive(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.byte()
    let archive = Data(input.remaining)
    var scanner = BinaryPropertyListScanner(archive)
    _ = try? scanner.scan()
    unarchive(as: selector, archive)
    return 0
}

private func seeds() -> [String: [UInt8]] {
    var seeds: [String: [UInt8]] = [:]
    func add(_ name: String, _ selector: UInt8, _ object: NSSecureCoding & NSObject) {
        if let data = try? SafeArchive.archive(object) { seeds[name] = [selector] + Array(data) }
    }
    let base = URL(string: "https://api.example.com/v1/")
    let manager = HTTPRequestOperationManager(baseURL: base)
    manager.responseSerializer = JSONResponseSerializer()
    manager.securityPolicy = SecurityPolicy(pinningMode: .publicKey, withPinnedCertificates: [Data([1, 2, 3])])
    add("manager", 0, manager)
    var request = URLRequest(url: URL(fileURLWithPath: "/upload"))
    request.httpMethod = "PUT"
    request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
    add("operation", 2, HTTPRequestOperation(request: request))
    let serializer = JSONRequestSerializer()
    serializer.setValue("Bearer x", forHTTPHeaderField: "Authorization")
    add("json-request-serializer", 4, serializer)
    add("compound", 12, CompoundResponseSerializer(responseSerializers: [JSONResponseSerializer(), XMLParserResponseSerializer()]))
    add("policy", 13, SecurityPolicy.default())
    return seeds
}

exit(FuzzDriver.main(seeds: seeds) { fuzzArchive($0, $1) })
