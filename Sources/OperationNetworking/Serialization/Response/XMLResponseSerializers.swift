import Foundation
// Re-exported: the serializers return `XMLParser` and `XMLDocument`, which `import OperationNetworking`
// alone must let a caller use.
@_exported import FoundationXML
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Returns an `XMLParser` for `application/xml` and `text/xml` bodies, not yet parsed
/// (AFNetworking's `AFXMLParserResponseSerializer`). A body declaring entities is refused, so an
/// expansion bomb never reaches the parser.
open class XMLParserResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    /// A serializer for the XML content types.
    public required init() {
        super.init()
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
    }

    override class var defaultAcceptableContentTypes: Set<String>? { ["application/xml", "text/xml"] }
    override var gatesOnContentType: Bool { true }

    override func decodedObject(from data: Data?, textEncodingName: @autoclosure () -> String?) throws -> Any? {
        guard let data else { return nil }
        try refuseEntityDeclarations(data)
        return XMLParser(data: data)
    }
}

/// Parses `application/xml` and `text/xml` bodies into an `XMLDocument` (FoundationXML on Linux;
/// AFNetworking's `AFXMLDocumentResponseSerializer`). A body that is not well-formed XML (`<a><b></a>`)
/// is an error, `NSURLErrorCannotDecodeContentData` in `ResponseSerializationErrorDomain` — libxml2
/// would otherwise repair it silently and print to stderr. Entity declarations are refused, so a
/// "billion laughs" body never reaches the parser.
open class XMLDocumentResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    private var storedOptions: XMLNode.Options = []   // guarded by lock

    /// A serializer for the XML content types.
    public required init() {
        super.init()
    }

    override class var defaultAcceptableContentTypes: Set<String>? { ["application/xml", "text/xml"] }
    override var gatesOnContentType: Bool { true }

    /// `XMLDocument` options. Default none.
    public var options: XMLNode.Options {
        get { lock.withLock { storedOptions } }
        set { lock.withLock { storedOptions = newValue } }
    }

    override func decodedObject(from data: Data?, textEncodingName: @autoclosure () -> String?) throws -> Any? {
        guard let data, !data.isEmpty else { return nil }
        try refuseEntityDeclarations(data)
        // XMLDocument recovers from errors; XMLParser reports them (a started but malformed document
        // still returns true from parse(), so parserError is what tells).
        let checker = XMLParser(data: data)
        if !checker.parse() || checker.parserError != nil {
            throw decodingError("The body is not a well-formed XML document.", underlying: checker.parserError)
        }
        let document: XMLDocument
        do {
            document = try XMLDocument(data: data, options: options)
        } catch {
            throw decodingError("The body is not a well-formed XML document.", underlying: error)
        }
        guard document.rootElement() != nil else {
            throw decodingError("The body is not a well-formed XML document.")
        }
        return document
    }

    /// A copy with every setting.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = super.copy(with: zone)
        (copy as? XMLDocumentResponseSerializer)?.options = options
        return copy
    }

    /// Archives the options with the base settings.
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(Int(truncatingIfNeeded: options.rawValue), forKey: "options")
    }

    /// Restores the settings.
    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        storedOptions = XMLNode.Options(rawValue: UInt(truncatingIfNeeded:
            coder.decodeCheckedInteger(forKey: "options", of: XMLDocumentResponseSerializer.self) ?? 0))
    }
}

extension HTTPResponseSerializer {
    /// Refuses XML that declares entities before libxml2 sees it: that is how expansion bombs
    /// ("billion laughs") start, and responses of an HTTP API have no use for them.
    func refuseEntityDeclarations(_ data: Data) throws {
        if data.range(of: Data("<!ENTITY".utf8)) != nil {
            throw decodingError("XML with entity declarations is not accepted.")
        }
    }
}
