import CZlib
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension SQLiteURLCache {
    /// An entry's fields as its row holds them: the response's URL, status and header fields (a JSON
    /// object of strings), the body, and the library's metadata from `userInfo`.
    ///
    /// - Threading: a value; pure.
    struct StoredRow {
        /// Why a row or a response cannot be one.
        enum Failure: Error {
            case notAnHTTPResponse
            case damagedRow
        }

        var responseURL: String
        var statusCode: Int
        var headerFields: [String: String]
        var body: Data
        var metadata: Data?

        /// The row for `cached`; throws `Failure.notAnHTTPResponse` for another kind of response.
        init(_ cached: CachedURLResponse) throws {
            guard let response = cached.response as? HTTPURLResponse, let url = response.url else {
                throw Failure.notAnHTTPResponse
            }
            responseURL = url.absoluteString
            statusCode = response.statusCode
            headerFields = [:]
            for (name, value) in response.allHeaderFields {
                guard let name = name as? String, let value = value as? String else { continue }
                headerFields[name] = value
            }
            body = cached.data
            metadata = cached.userInfo?[CacheEntryMetadata.userInfoKey] as? Data
        }

        /// The row stored under `key` read back: the five columns in the order `values` writes them,
        /// then the checksum stored with them. Throws `Failure.damagedRow` when a field is missing, of
        /// another type, or cannot be decoded, or when the fields and the key are not the ones the
        /// checksum was taken of (SQLite checks no page's contents, so a changed byte would otherwise be
        /// handed out as the response).
        init(_ row: [SQLiteValue], key: String) throws {
            guard row.count == 6, case .integer(let checksum) = row[5],
                  checksum == Self.checksum(key: key, values: row.prefix(5)) else { throw Failure.damagedRow }
            guard case .text(let url) = row[0], case .integer(let status) = row[1],
                  case .blob(let headers) = row[2], case .blob(let body) = row[3] else { throw Failure.damagedRow }
            switch row[4] {
            case .blob(let metadata): self.metadata = metadata
            case .null: metadata = nil
            default: throw Failure.damagedRow
            }
            guard (100...999).contains(status), URL(string: url) != nil,
                  let fields = try? JSONDecoder().decode([String: String].self, from: headers) else {
                throw Failure.damagedRow
            }
            responseURL = url
            statusCode = Int(status)
            headerFields = fields
            self.body = body
        }

        /// The values of the row's response_url, status, header_fields, body and metadata columns.
        var values: [SQLiteValue] {
            get throws {
                [.text(responseURL), .integer(Int64(statusCode)), .blob(JSONText.object(headerFields)),
                 .blob(body), metadata.map { .blob($0) } ?? .null]
            }
        }

        /// A CRC-32 of `key` and the row's `values`, each with its type and length: any one changed byte,
        /// or a row read under another entry's key, gives another value.
        static func checksum(key: String, values: some Collection<SQLiteValue>) -> Int64 {
            var crc = crc32(0, nil, 0)
            func add(_ bytes: UnsafeRawBufferPointer) {
                crc = crc32_z(crc, bytes.baseAddress?.assumingMemoryBound(to: Bytef.self), z_size_t(bytes.count))
            }
            func add(_ tag: UInt8, _ bytes: UnsafeRawBufferPointer) {
                withUnsafeBytes(of: tag) { add($0) }
                withUnsafeBytes(of: UInt64(bytes.count).littleEndian) { add($0) }
                add(bytes)
            }
            var key = key
            key.withUTF8 { add(0, UnsafeRawBufferPointer($0)) }
            for value in values {
                switch value {
                case .integer(let number):
                    withUnsafeBytes(of: number.littleEndian) { add(1, $0) }
                case .real(let number):
                    withUnsafeBytes(of: number.bitPattern.littleEndian) { add(2, $0) }
                case .text(var text):
                    text.withUTF8 { add(3, UnsafeRawBufferPointer($0)) }
                case .blob(let data):
                    data.withUnsafeBytes { add(4, $0) }
                case .null:
                    add(5, UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
            return Int64(crc)
        }

        /// The bytes the entry counts for, beside its key.
        var size: Int {
            responseURL.utf8.count + body.count + (metadata?.count ?? 0)
                + headerFields.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        }

        /// The row for `entry`: its metadata encoded as JSON again, as `userInfo` carries it.
        init(_ entry: Entry) throws {
            responseURL = entry.url.absoluteString
            statusCode = entry.statusCode
            headerFields = entry.headers
            body = entry.body
            switch entry.metadata {
            case .found(let found): metadata = try found.encodedJSON()
            case .absent: metadata = nil
            case .damaged(let bytes): metadata = bytes
            }
        }

        /// The entry the row holds, stored under `key` at `storedAt`; nil when its URL does not parse.
        func entry(key: String, storedAt: Double) -> Entry? {
            guard let url = URL(string: responseURL) else { return nil }
            let fields = headerFields.lowercasedNames
            return Entry(url: url, statusCode: statusCode, headers: headerFields, fields: fields,
                         facts: FreshnessFacts(fields), body: body, metadata: Self.reading(metadata),
                         size: size + key.utf8.count, storedAt: storedAt)
        }

        /// What the metadata bytes of a row or a `userInfo` say.
        static func reading(_ metadata: Data?) -> Entry.MetadataReading {
            guard let metadata else { return .absent }
            switch CacheEntryMetadata.read(from: [CacheEntryMetadata.userInfoKey: metadata]) {
            case .found(let found): return .found(found)
            case .absent: return .absent
            case .damaged: return .damaged(metadata)
            }
        }
    }
}

extension SQLiteURLCache.Entry {
    /// The entry for `cached` as an app hands it to `storeCachedResponse(_:for:)`: HTTP responses only,
    /// and of `userInfo` only the library's metadata.
    convenience init?(_ cached: CachedURLResponse, key: String, storedAt: Double) {
        guard let row = try? SQLiteURLCache.StoredRow(cached), let url = URL(string: row.responseURL) else { return nil }
        let fields = row.headerFields.lowercasedNames
        self.init(url: url, statusCode: row.statusCode, headers: row.headerFields, fields: fields,
                  facts: FreshnessFacts(fields), body: cached.data,
                  metadata: SQLiteURLCache.StoredRow.reading(row.metadata),
                  size: row.size + key.utf8.count, storedAt: storedAt)
    }

    /// The entry as `URLCache` hands it out, its metadata in `userInfo` as JSON; nil when Foundation
    /// will not build its response.
    var cachedResponse: CachedURLResponse? {
        guard let response = HTTPURLResponse(url: url, statusCode: statusCode, httpVersion: "HTTP/1.1",
                                             headerFields: headers) else { return nil }
        var userInfo: [AnyHashable: Any]?
        switch metadata {
        case .found(let found): userInfo = (try? found.userInfo()) ?? nil
        case .absent: userInfo = nil
        case .damaged(let bytes): userInfo = [CacheEntryMetadata.userInfoKey: bytes]
        }
        return CachedURLResponse(response: response, data: body, userInfo: userInfo, storagePolicy: .allowed)
    }
}

// MARK: - The entry a row holds

extension SQLiteURLCache {
    /// One stored response as the cache keeps it in memory: decoded once, when it was stored or first
    /// read, and handed out as it is (a hit builds nothing). An object, not a value: the memory tier,
    /// the batch waiting to be written and every reader share it, so passing it on is one retain, not
    /// one for each of its parts.
    /// - Threading: immutable; kept under the cache's memory lock and handed out from it to any thread.
    final class Entry: Sendable {
        /// The response's URL, status and header fields (Foundation's `HTTPURLResponse` is built only
        /// for `cachedResponse`).
        let url: URL
        let statusCode: Int
        let headers: [String: String]
        /// The same fields by lowercased name (`StoredResponse.fields`).
        let fields: [String: String]
        /// What the fields say about freshness, parsed once.
        let facts: FreshnessFacts
        /// The head the response came with, or repeated by one that came with it
        /// (`StoredResponse.head`): `nil` for an entry read from the file or stored by the app, until a
        /// response repeats it.
        let head: ResponseHead?
        let body: Data
        /// The library's metadata, as stored beside the response.
        let metadata: MetadataReading
        /// The bytes it counts for (`StoredRow.size` plus its key).
        let size: Int
        /// When it was stored (`removeCachedResponses(since:)`), as a time since the reference date.
        let storedAt: Double
        /// The head a hit delivers but for its `Age` (`StoredResponse.answeringHead`), made once here.
        let answeringHead: ResponseHead?
        /// The bytes it counts for in memory: `size`, and the answering head's fields when it has one.
        let memorySize: Int

        convenience init(url: URL, statusCode: Int, headers: [String: String], fields: [String: String],
                         facts: FreshnessFacts, head: ResponseHead? = nil, body: Data, metadata: MetadataReading,
                         size: Int, storedAt: Double) {
            let answering = StoredResponse.answeringHead(url: url, statusCode: statusCode, fields: fields, facts: facts)
            self.init(url: url, statusCode: statusCode, headers: headers, fields: fields, facts: facts, head: head,
                      body: body, metadata: metadata, size: size, storedAt: storedAt, answeringHead: answering,
                      memorySize: size + (answering?.fieldStorageSize ?? 0))
        }

        private init(url: URL, statusCode: Int, headers: [String: String], fields: [String: String],
                     facts: FreshnessFacts, head: ResponseHead?, body: Data, metadata: MetadataReading, size: Int,
                     storedAt: Double, answeringHead: ResponseHead?, memorySize: Int) {
            self.url = url
            self.statusCode = statusCode
            self.headers = headers
            self.fields = fields
            self.facts = facts
            self.head = head
            self.body = body
            self.metadata = metadata
            self.size = size
            self.storedAt = storedAt
            self.answeringHead = answeringHead
            self.memorySize = memorySize
        }

        /// The same entry with `head`, a head that repeated it (`head`).
        func with(head: ResponseHead) -> Entry {
            Entry(url: url, statusCode: statusCode, headers: headers, fields: fields, facts: facts, head: head, body: body,
                  metadata: metadata, size: size, storedAt: storedAt, answeringHead: answeringHead, memorySize: memorySize)
        }

        /// What an entry holds of the library's metadata.
        enum MetadataReading {
            case found(CacheEntryMetadata)
            /// Stored without it (through `storeCachedResponse` by someone else).
            case absent
            /// Stored with metadata this version cannot read (kept as it came).
            case damaged(Data)
        }
    }
}


extension SQLiteURLCache.Entry {
    /// Whether this entry says nothing `current` does not, where nothing depends on when it was
    /// received: the same URL, status, body, trust and secondary key, the same fields but `Date`, and
    /// fields that give no freshness lifetime and no time to serve it stale, or that say `no-cache`.
    /// Such a response is validated (or fetched again) before every use, or read as it is
    /// (`.returnCacheDataElseLoad`); writing it again would change nothing a request can see, so the
    /// stored one stays: the usual API response without cache fields, fetched again and again, and a
    /// `no-cache` response validated by a `304` each time, cost no write.
    func repeatsWithoutTime(_ current: SQLiteURLCache.Entry) -> Bool {
        guard facts.carriesNoTime || facts.alwaysValidated, statusCode == current.statusCode,
              body.count == current.body.count, fields.count == current.fields.count, url == current.url,
              case .found(let mine) = metadata, case .found(let theirs) = current.metadata,
              mine.requestURL == theirs.requestURL, mine.trust == theirs.trust,
              mine.varyingRequestHeaders == theirs.varyingRequestHeaders, body == current.body else { return false }
        // Both with a `Date` or both without: otherwise one other field of `current` could stand in for it.
        guard (fields["date"] == nil) == (current.fields["date"] == nil) else { return false }
        return fields.allSatisfy { name, value in name == "date" || current.fields[name] == value }
    }

    /// An entry for `response` and `body` with `metadata`, stored under `key` now; its size counts
    /// the URL, the header fields, the body, the key and the metadata's fields.
    convenience init(url: URL, statusCode: Int, headers: [String: String], fields: [String: String], facts: FreshnessFacts,
                     head: ResponseHead? = nil, body: Data, metadata: CacheEntryMetadata, key: String, storedAt: Double) {
        let fieldBytes = fields.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        let varying = metadata.varyingRequestHeaders.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        // The metadata's JSON adds its field names and dates to what it holds: about 128 bytes.
        let size = url.absoluteString.utf8.count + fieldBytes + body.count + key.utf8.count
            + metadata.requestURL.utf8.count + varying + (metadata.trust?.utf8.count ?? 0) + 128
        self.init(url: url, statusCode: statusCode, headers: headers, fields: fields, facts: facts, head: head, body: body,
                  metadata: .found(metadata),
                  size: size, storedAt: storedAt)
    }
}
