import Foundation
@testable import OperationNetworking
import XCTest

/// Inputs the libFuzzer target `FuzzArchive` (Fuzz/Targets/FuzzArchive) found, and the parser rules
/// behind them. Each archive passed BinaryPropertyListScanner but not CoreFoundation's binary plist
/// parser, so corelibs retried it as XML and OpenStep text and leaked the error objects of those
/// attempts (LeakSanitizer: 120–464 bytes per call), or built a dictionary that leaked a key. The
/// scanner now applies CF's rules, so such an archive is refused before Foundation reads it.
/// A leak cannot be seen from XCTest; what is checked is that the scanner refuses each input.
final class ArchiveFuzzRegressionTests: LibraryTestCase {
    /// Asserts that the scanner refuses `data` for `reason` and that SafeArchive reports it as damaged.
    private func assertRefused(_ data: Data, _ reason: String, file: StaticString = #filePath, line: UInt = #line) {
        var scanner = BinaryPropertyListScanner(data)
        XCTAssertThrowsError(try scanner.scan(), file: file, line: line) { error in
            XCTAssertEqual((error as? BinaryPropertyListScanner.Invalid)?.reason, reason, file: file, line: line)
        }
        XCTAssertThrowsError(try SafeArchive.unarchive(SecurityPolicy.self, from: data), file: file, line: line) { error in
            XCTAssertEqual((error as NSError).domain, ArchiveErrorDomain, file: file, line: line)
            XCTAssertEqual((error as NSError).code, ArchiveErrorCode.damaged.rawValue, "\(error)", file: file, line: line)
        }
    }

    private func fuzzInput(_ base64: String) throws -> Data {
        try XCTUnwrap(Data(base64Encoded: base64, options: .ignoreUnknownCharacters))
    }

    /// leak-e64c0364…: an archive of a policy followed by part of a manager's — bytes between the offset
    /// table and the trailer, which CF refuses (the table must end where the trailer starts).
    func testFuzzLeakBytesBetweenOffsetTableAndTrailer() throws {
        assertRefused(try fuzzInput("""
        YnBsaXN0MDDUAQIDBAUGBwpYJHZlcnNpb25ZJGFyY2hpdmVyVCR0b3BYJG9iamVjdHMSAAGGoF8QD05TS2V5ZWRBcmNoaXZlctEICVRy
        b290gAGkCwwbHFUkbnVsbNcNDg8QERITFBUWFxgYGl8QE3ZhbGlkYXRlc0RvbWFpbk5hbWVWJGNsYXNzXlNTTFBpbm5pbmdNb2RlXxAY
        YWxsb3dJbnZhbGlkQ2VydGlmaWNhdGVzXxAScGlubmVkQ2VydGlmaWNhdGVzXxAWYWRkaXRpb25hbFRydXN0QW5jaG9yc1d2ZXJzaW9u
        CYADEAAIgAKAAhABQltd0h0eHyBaJGNsYXNzbmFtZVgkY2xhc3Nlc18QIk9wZXJhdGlvbk5ldHdvcmtpbmcuU2VjdXJpdHlQb2xpY3mi
        ISJfECJPcGVyYXRpb25OZXR3b3JraW5nLlNlY3VyaXR5UG9saWN5WE5TT2JqZWN0AAgAEQAaACQAKQAyADcASQBMAFEAUwBYAF4AbQCD
        AIoAmQC0AMkA4gDqAOsA7QDvAPAA8gD0APYA+QD+AQkBEgE3AToBXwAAAAB0YXR1c0NvZGVzV3ZlcnNpb24QAoAEgAMQBIAHgAqAAhAB
        TxEBkVsyMDAsMjAxLDIwMiwyMDMsMjA0LDIwNSwyMDYsMjA3LDIwOCwyMDksMjEwLDIxMSwyMTIsMjEzLDIxNCwyMTUsMjE2LDIxNywy
        MTgsMjE5LDIyMCwyMjEsMjIyLDIyMywyMjQsMjI1LDIyNiwyMjcsMjI4LDIyOSwyMzAsMjMxLDIzMiwyMzMsMjM0LDIzNSwyMzYsMjM3
        LDIzOCwyMzksMjQwLDI0MSwyNDIsMjQzLDI0NCwyNDUsMjQ2LDI0NywyNDgsMjQ5LDI1MCwyNTEsMjUyLDI1MywyNTQsMjU1LDI1Niwy
        NTcsMjU4LDI1OSwyNjAsMjYxLDI2MiwyNjMsMjY0LDI2NSwyNjYsMjY3LDI2OCwyNjksMjcwLDI3MSwyNzIsMjczLDI3NCwyNzUsMjc2
        LDI3NywyNzgsMjc5LDI4MCwyODEsMjgyLDI4MywyODQsMjg1LDI4NiwyODcsMjg4LDI4OSwyOTAsMjkxLDI5MiwyOTMsMjk0LDI5NSwy
        OTYsMjk3LDI5OCwyOTldRG51bGzXICEiIyQlJhwnKCkbGCtXdmVyc2lvbl8QGXJlbW92ZXNLZXlzV2l0aE51bGxWYWx1ZXNWJGNsYXNz
        XnJlYWRpbmdPcHRpb25zXxAVYWNjZXB0YWJsZVN0YXR1c0NvZGVzXnN0cmluZ0VuY29kaW5nXxAWYWNjZXB0YWJsZUNvbnRlbnRUeXBl
        cwiABhAAgAKABU8QNVsiYXBwbGljYXRpb25cL2pzb24iLCJ0ZXh0XC9qYXZhc2NyaXB0IiwidGV4dFwvanNvbiJd0i4vMDRYJGNsYXNz
        ZXNaJGNsYXNzbmFtZaMxMjNfECpPcGVyYXRpb25OZXR3b3JraW5nLkpTT05SZXNwb25zZVNlcmlhbGl6ZXJfECpPcGVyYXRpb25OZXR3
        b3JraW5nLkhUVFBSZXNwb25zZVNlcmlhbGl6ZXJYTlNPYmplY3RfECpPcGVyYXRpb25OZXR3b3JraW5nLkpTT05SZXNwb25zZVNlcmlh
        bGl6ZXLVNjc4OTocOxsYPVd2ZXJzaW9uViRjbGFzc18QFWFjY2VwdGFibGVTdGF0dXNDb2Rlc15zdHJpbmdFbmNvZGluZ18QFmFjY2Vw
        dGFibGVDb250ZW50VHlwZXOACYACgAhPECBbImFwcGxpY2F0aW9uXC94bWwiLCJ0ZXh0XC94bWwiXdJAQUJDWiRjbGFzc25hbWVYJGNs
        YXNzZXNfEC9PcGVyYXRpb25OZXR3b3JraW5nLlhNTFBhcnNlclJlc3BvbnNlU2VyaWFsaXplcqNERUZfEC9PcGVyYXRpb25OZXR3b3Jr
        aW5nLlhNTFBhcnNlclJlc3BvbnNlU2VyaWFsaXplcl8QKk9wZXJhdGlvbk5ldHdvcmtpbmcuSFRUUFJlc3BvbnNlU2VyaWFsaXplclhO
        U09iamVjdNJISUpLWiRjbGFzc25hbWVYJGNsYXNzZXNfEC5PcGVyYXRpb25OZXR3b3JraW5nLkNvbXBvdW5kUmVzcG9uc2VTZXJpYWxp
        emVyo0xNTl8QLk9wZXJhdGlvbk5ldHdvcmtpbmcuQ29tcG91bmRSZXNwb25zZVNlcmlhbGl6ZXJfECpPcGVyYXRpb25OZXR3b3JraW5n
        LkhUVFBSZXNwb25zZVNlcmlhbGl6ZXJYTlNPYmplY3QACAARABsAIAApADIARABHAEwATgBTAF8AZQB2AJIAqgDDANIA6gDxAQkBEQET
        ARUBFwEZARsBHQEfASECtgK7AsoC0gLuAvUDAAACAQAAAAAAAAAjAAAAAAAAAAAAAAAAAAABaA==
        """), "bad trailer")
    }

    /// leak-9e3c3271…: a dictionary naming the same key twice; CF's dictionary built from the parsed
    /// key list drops the second key without releasing it.
    func testFuzzLeakRepeatedDictionaryKey() throws {
        assertRefused(try fuzzInput("""
        YnBsaXN0MDDUAQIDBAUGYGFZJGFyY2hpdmVyWCRvYmplY3RzWCR2ZXJzaW9uVCR0b3BfEA9OU0tleWVkQXJjaGl2ZXKvEBAHCBcYJCUm
        LTk6O0NQUVJZVSRudWxs1wkKCwwNDg8QERITFBUWViRjbGFzc15zZWN1cml0eVBvbGljeV8QEnJlc3BvbnNlU2VyaWFsaXplcld2ZXJz
        aW9uXxARcmVxdWVzdFNlcmlhbGl6ZXJXYmFzZVVSTF8QGnNob3VsZFVzZUNyZWRlbnRpYWxTdG9yYWdlgA+AC4AHEAGAA4ACCV8QG2h0
        dHBzOi8vYXB4aWFlLm1wbGUuY29tL3YxL9YZGhscHR4fICETIiNfEB1xdWVyeVN0cmluZ1NlcmlhbGl6YXRpb25TdHlsZVYkY2xhc3Nf
        EDJodHRwTWV0aG9kc0VuY29kaW5nUGFyYW1ldGVyc0luVVJJV3ZlcnNpb25ec3RyaW5nRW5jb2RpbmdfEBJodHRwUmVxdWVzdEhlYWRl
        cnMQAIAGgAUQBIAETxCGeyJBY2NlcHQtTGFuZ3VhZ2UiOiJlbi0wMDE7cT0xIiwiVXNlci1BZ2VudCI6IkZ1enpBcmNoaXZlIChMaW51
        eCA2LjE4LjQ0LWZjLXY1MDk7IHg4Nl82NCkgT3BlcmF0aW9uTmV0d29ya2luZ1wvMC4xLjAgbGliY3VybFwvNy44OC4xIn1PEBdbIkRF
        TEVURSIsIkdFVCIsIkhFQUQiXdInKCkqWiRjbGFzc25hbWVYJGNsYXNzZXNfEClPcGVyYXRpb25OZXR3b3JraW5nLkhUVFBSZXF1ZXN0
        U2VyaWFsaXplcqIrLF8QKU9wZXJhdGlvbk5ldHdvcmtpbmcuSFRUUFJlcXVlc3RTZXJpYWxpemVyWE5TT2JqZWN01y4vMDEyMTQ1IjYT
        NzgfViRjbGFzc15zdHJpbmdFbmNvZGluZ18QFmFjY2VwdGFibGVDb250ZW50VHlwZXNXdmVyc2lvbl8QFWFjY2VwdGFibGVTdGF0dXND
        b2Rlc18QGXJlbW92ZXNLZXlzV2l0aE51bGxWYWx1ZXNecmVhZGluZ09wdGlvbnOACoAJgAgITxEBkVsyMDAsMjAxLDIwMiwyMDMsMjA0
        LDIwNSwyMDYsMjA3LDIwOCwyMDksMjEwLDIxMSwyMTIsMjEzLDIxNCwyMTUsMjE2LDIxNywyMTgsMjE5LDIyMCwyMjEsMjIyLDIyMywy
        MjQsMjI1LDIyNiwyMjcsMjI4LDIyOSwyMzAsMjMxLDIzMiwyMzMsMjM0LDIzNSwyMzYsMjM3LDIzOCwyMzksMjQwLDI0MSwyNDIsMjQz
        LDI0NCwyNDUsMjQ2LDI0NywyNDgsMjQ5LDI1MCwyNTEsMjUyLDI1MywyNTQsMjU1LDI1NiwyNTcsMjU4LDI1OSwyNjAsMjYxLDI2Miwy
        NjMsMjY0LDI2NSwyNjYsMjY3LDI2OCwyNjksMjcwLDI3MSwyNzIsMjczLDI3NCwyNzUsMjc2LDI3NywyNzgsMjc5LDI4MCwyODEsMjgy
        LDI4MywyODQsMjg1LDI4NiwyODcsMjg4LDI4OSwyOTAsMjkxLDI5MiwyOTMsMjk0LDI5NSwyOTYsMjk3LDI5OCwyOTldTxA1WyJhcHBs
        aWNhdGlvblwvanNvbiIsInRleHRcL2phdmFzY3JpcHQiLCJ0ZXh0XC9qc29uIl3SPD0+P1okY2xhc3NuYW1lWCRjbGFzc2VzXxAqT3Bl
        cmF0aW9uTmV0d29ya2luZy5KU09OUmVzcG9uc2VTZXJpYWxpemVyo0BBQl8QKk9wZXJhdGlvbk5ldHdvcmtpbmcuSlNPTlJlc3BvbnNl
        U2VyaWFsaXplcl8QKk9wZXJhdGlvbk5ldHdvcmtpbmcuSFRUUFJlc3BvbnNlU2VyaWFsaXplclhOU09iamVjdNdERUZHSElKExY4TU4T
        T15TU0xQaW5uaW5nTW9kZV8QE3ZhbGlkYXRlc0RvbWFpbk5hbWVfEBhhbGxvd0ludmFsaWRDZXJ0aWZpY2F0ZXNWJGNsYXNzXxAWYWRk
        aXRpb25hbFRydXN0QW5jaG9yc1d2ZXJzaW9uXxAScGlubmVkQ2VydGlmaWNhdGVzCQiADoANgAxIWyJBUUlEIl1CW13SU1RVVlokY2xh
        c3NuYW1lWCRjbGFzc2VzXxAiT3BlcmF0aW9uTmV0d29ya2luZy5TZWN1cml0eVBvbGljeaJXWF8QIk9wZXJhdGlvbk5ldHdvcmtpbmcu
        U2VjdXJpdHlQb2xpY3lYTlNPYmplY3TSWltcXVokY2xhc3NuYW1lWCRjbGFzc2VzXxAvT3BlcmF0aW9uTmV0d29ya2luZy5IVFRQUmVx
        dWVzdE9wZXJhdGlvbk1hbmFnZXKiXl9fEC9PcGVyYXRpb25OZXR3b3JraW5nLkhUVFBSZXF1ZXN0T3BlcmF0aW9uTWFuYWdlclhOU09i
        amVjdBIAAYag0WJjVHJvb3SAAQAIABEAGwAkAC0AMgBEAFcAXQBsAHMAggCXAJ8AswC7ANgA2gDcAN4A4ADiAOQA5QEDARABMAE3AVwB
        ZAFzAYgBigGMAY4BkAGSAhsCNQI6AkUCTgJ6An0CqQKyAsECyALXAvAC+AMQAywDOwM9Az8DQQNCBNcFDwUUBR8FKAVVBVkFhgWzBbwF
        ywXaBfAGCwYSBisGMwZIBkkGSgZMBk4GUAZZBlwGYQZsBnUGmgadBsIGywbQBtsG5AcWBxkHSwdUB1kHXAdhAAAAAAAAAgEAAAAAAAAA
        ZAAAAAAAAAAAAAAAAAAAB2M=
        """), "dictionary key repeated")
    }

    /// leak-3e90ebed…: an empty UTF-16 string (marker 0x60) as a key; CF allocates a 0-byte buffer
    /// for its characters, which fails the whole parse.
    func testFuzzLeakEmptyUTF16String() throws {
        assertRefused(try fuzzInput("""
        YnBsaXN0MDDUAQIDBAUfICNYJG9iamVjdHNYJHZlcnNpb25UJHRvcFkkYXJjaGl2ZXKlBgcVFhdVJG51bGzXCAkKCwwNDg8QERITERRf
        ECJodHRwTWV0aG9kc0VuY29kaW5nUGFyYW1ldGVyc0luVVJJV3ZlcnNpb25fEBRxdWVyeVN0cmluZ1NlcmlhbGl6YXRpb25TdHlsZWAk
        Y2xhc3NfEBJodHRwUmVxdWVzdEhlYWRlcnNed3JpdGluZ09wdGlvbnNec3RyaW5nRW5jb2RpbmeAAxABEACABIACEARPEKF7IkFjY2Vw
        dC1MYW5ndWFnZSI6ImVuLTAwMTtxPTEiLCJBdXRob3JpemF0aW9uIjoiQmVhcmVyIHgiLCJVc2VyLUFnZW50IjoiRnV6ekFyY2hpdmUg
        KExpbnV4IDYuMTguNDQtZmMtdjUwOTsgeDg2XzY0KSBPcGVyYXRpb25OZXR3b3JraW5nXC8wLjEuMCBsaWJjdXJsXC83Ljg4LjEifU8Q
        F1siREVMRVRFIiwiR0VUIiwiSEVBRCJd0hgZGh5YJGNsYXNzZXNaJGNsYXNzbmFtZaMbHB1fEClPcGVyYXRpb25OZXR3b3JraW5nLkpT
        T05SZXF1ZXN0U2VyaWFsaXplcl8QKU9wZXJhdGlvbk5ldHdvcmtpbmcuSFRUUFJlcXVlc3RTZXJpYWxpemVyWE5TT2JqZWN0XxApT3Bl
        cmF0aW9uTmV0d29ya2luZy5KU09OUmVxdWVzdFNlcmlhbGl6ZXISAAGGoNEhIlRyb290gAFfEA9OU0tleWVkQXJjaGl2ZXIACAARABoA
        IwAoADIAOAA+AE0AcgB6AJoAoQC2AMUA1ADWANgA2gDcAN4A4AGEAZ4BowGsAbcBuwHnAhMCHAJIAk0CUAJVAlcAAAAAAAACAQAAAAAA
        AAAkAAAAAAAAAAAAAAAAAAACaQ==
        """), "empty UTF-16 string")
    }

    // MARK: - The other CF rules the scanner took over with these fixes, on a real archive

    private func policyArchive() throws -> [UInt8] {
        [UInt8](try SafeArchive.archive(SecurityPolicy.default()))
    }

    /// Where `text`, as an ASCII string object (marker and bytes), first occurs in `archive`.
    private func stringObject(_ text: String, in archive: [UInt8]) throws -> Int {
        let needle = [UInt8(0x50 | text.utf8.count)] + Array(text.utf8)
        let found = archive.indices.first { archive[$0...].starts(with: needle) }
        return try XCTUnwrap(found, "no string object \(text) in the archive")
    }

    func testAnUntouchedArchiveStillPasses() throws {
        var scanner = BinaryPropertyListScanner(Data(try policyArchive()))
        XCTAssertNoThrow(try scanner.scan())
    }

    func testANonASCIIByteInAnASCIIStringIsRefused() throws {
        var archive = try policyArchive()
        archive[try stringObject("$top", in: archive) + 2] = 0xE9
        assertRefused(Data(archive), "non-ASCII byte in an ASCII string")
    }

    func testTheFillByteIsNotAValue() throws {
        var archive = try policyArchive()
        archive[try stringObject("$null", in: archive)] = 0x0F
        assertRefused(Data(archive), "bad simple value")
    }

    func testARealOtherThanFloatOrDoubleIsRefused() throws {
        var archive = try policyArchive()
        // $version is the integer 100000 (0x12 + 4 bytes): as a real of 2^2 = 4 bytes it stays valid.
        let version = try XCTUnwrap(archive.indices.first { archive[$0...].starts(with: [0x12, 0x00, 0x01, 0x86, 0xA0]) })
        archive[version] = 0x22
        var scanner = BinaryPropertyListScanner(Data(archive))
        XCTAssertNoThrow(try scanner.scan(), "a float is a real CF reads")
        archive[version] = 0x21
        assertRefused(Data(archive), "bad number")
    }
}
