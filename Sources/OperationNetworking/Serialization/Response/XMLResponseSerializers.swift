import Foundation
// Re-exported: the serializers return `XMLParser` and `XMLDocument`, which `import OperationNetworking`
// alone must let a caller use.
@_exported import FoundationXML
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Returns an `XMLParser` for `application/xml` and `text/xml` bodies, not yet parsed
/// (AFNetworking's `AFXMLParserResponseSerializer`).
///
/// No entity of the body is ever expanded or loaded: a body with a document type declaration
/// (`<!DOCTYPE`) or an entity declaration is refused, whatever its encoding (UTF-8, UTF-16 with or
/// without byte order mark, UCS-4 big-endian, or the 8-bit encoding its XML declaration names), and
/// so is a body whose encoding cannot be read exactly as libxml2 reads it (UTF-7, EBCDIC, a
/// declaration contradicting the byte order mark, a NUL character…): both with
/// `NSURLErrorCannotDecodeContentData` in `ResponseSerializationErrorDomain`. The parser returned has
/// `shouldResolveExternalEntities` off and `externalEntityResolvingPolicy` `.never`.
/// - Threading: as `HTTPResponseSerializer` (no settings of its own); any thread.
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
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.externalEntityResolvingPolicy = .never
        return parser
    }
}

/// Parses `application/xml` and `text/xml` bodies into an `XMLDocument` (FoundationXML on Linux;
/// AFNetworking's `AFXMLDocumentResponseSerializer`). A body that is not well-formed XML (`<a><b></a>`)
/// is an error, `NSURLErrorCannotDecodeContentData` in `ResponseSerializationErrorDomain` — libxml2
/// would otherwise repair it silently and print to stderr.
///
/// No entity of the body is ever expanded or loaded: a body with a document type declaration
/// (`<!DOCTYPE`) or an entity declaration, or whose encoding cannot be read exactly as libxml2 reads
/// it, is refused with that same error, as `XMLParserResponseSerializer` refuses it; and the document
/// is parsed with external loading and entity substitution off, whatever `options` say.
/// - Threading: as `HTTPResponseSerializer`; `options` live behind a lock of their own. Any thread.
open class XMLDocumentResponseSerializer: HTTPResponseSerializer, @unchecked Sendable {
    private let storedOptions = Protected<XMLNode.Options>([])

    /// A serializer for the XML content types.
    public required init() {
        super.init()
    }

    override class var defaultAcceptableContentTypes: Set<String>? { ["application/xml", "text/xml"] }
    override var gatesOnContentType: Bool { true }

    /// `XMLDocument` options. Default none. `.nodeLoadExternalEntitiesAlways`,
    /// `.nodeLoadExternalEntitiesSameOriginOnly` and `.documentXInclude` are ignored, and
    /// `.nodeLoadExternalEntitiesNever` is always added when parsing: a response never loads anything.
    public var options: XMLNode.Options {
        get { storedOptions.value }
        set { storedOptions.withLock { $0 = newValue } }
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
            document = try XMLDocument(data: data, options: XMLDocumentResponseSerializer.parsingOptions(options))
        } catch {
            throw decodingError("The body is not a well-formed XML document.", underlying: error)
        }
        guard document.rootElement() != nil else {
            throw decodingError("The body is not a well-formed XML document.")
        }
        return document
    }

    /// `options` without a way to load an external entity or substitute one: corelibs turns libxml2's
    /// entity substitution (which loads external entities) on unless `.nodeLoadExternalEntitiesNever` is set.
    static func parsingOptions(_ options: XMLNode.Options) -> XMLNode.Options {
        var safe = options
        safe.remove([.nodeLoadExternalEntitiesAlways, .nodeLoadExternalEntitiesSameOriginOnly, .documentXInclude])
        safe.insert(.nodeLoadExternalEntitiesNever)
        return safe
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
        let decoded = XMLNode.Options(rawValue: UInt(truncatingIfNeeded:
            coder.decodeCheckedInteger(forKey: "options", of: XMLDocumentResponseSerializer.self) ?? 0))
        storedOptions.withLock { $0 = decoded }
    }
}

extension HTTPResponseSerializer {
    /// Refuses XML that could make libxml2 expand or load an entity, before libxml2 sees it: a DTD or
    /// entity declaration in whatever encoding libxml2 would read, or an encoding that cannot be read
    /// as libxml2 reads it (`XMLEntityGuard`). Responses of an HTTP API have no use for a DTD.
    func refuseEntityDeclarations(_ data: Data) throws {
        do {
            try XMLEntityGuard.check(data)
        } catch {
            throw decodingError(error.description)
        }
    }
}
