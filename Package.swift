// swift-tools-version:6.0
// OperationNetworking: AFNetworking 2.x's operation-queue HTTP client for Linux, on libcurl.
import PackageDescription

/// A system library target: a module map over headers `pkgConfig` finds, installed on Debian by `debian`.
func pkgConfigLibrary(_ name: String, pkgConfig: String, debian: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([debian])])
}

let package = Package(
    name: "OperationNetworking",
    products: [
        // The library is the one product, so a package that depends on it resolves swift-log,
        // swift-metrics and swift-distributed-tracing alone: SwiftPM resolves only what a dependency's
        // products use. The `onet` tool, the test server and the tests are the repository's own
        // (`swift run onet` still works); scripts/docs runs the toolchain's docc, so no documentation
        // plugin is declared (nor compiled by every build).
        .library(name: "OperationNetworking", targets: ["OperationNetworking"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        // C libraries found through pkg-config, each with the Debian package that provides it.
        // libcurl itself.
        pkgConfigLibrary("CCurl", pkgConfig: "libcurl", debian: "libcurl4-openssl-dev"),
        // zlib, libbrotlidec and libzstd: the library decodes gzip, deflate, br and zstd bodies itself
        // so that a compressed stream cut short is an error (libcurl 7.88 passes it; see ContentDecoder).
        pkgConfigLibrary("CZlib", pkgConfig: "zlib", debian: "zlib1g-dev"),
        pkgConfigLibrary("CBrotli", pkgConfig: "libbrotlidec", debian: "libbrotli-dev"),
        pkgConfigLibrary("CZstd", pkgConfig: "libzstd", debian: "libzstd-dev"),
        // libpsl, the Public Suffix List: a cookie may not claim a public suffix as its domain.
        pkgConfigLibrary("CPsl", pkgConfig: "libpsl", debian: "libpsl-dev"),
        // SQLite, the default HTTP cache's store (SQLiteURLCache): one database file per cache.
        pkgConfigLibrary("CSQLite", pkgConfig: "sqlite3", debian: "libsqlite3-dev"),
        // libbrotlienc, for the test server's br bodies only; never linked into the library.
        pkgConfigLibrary("CBrotliEncoder", pkgConfig: "libbrotlienc", debian: "libbrotli-dev"),
        // Typed, non-variadic wrappers for curl_easy_setopt / getinfo / curl_multi_setopt.
        .target(name: "CCurlShim", dependencies: ["CCurl"]),
        // X.509 verification for SecurityPolicy, trust stores handed to TLS connections, and the protocol
        // a connection's handshake agreed on (ALPN), through the OpenSSL libcurl already uses (libssl-dev).
        .target(name: "CTrust", linkerSettings: [.linkedLibrary("crypto"), .linkedLibrary("ssl")]),
        // Certificates (P-256 keys, ECDSA signatures) and MD5 for the test server, through the same
        // libcrypto; never linked into the library.
        .target(name: "CTestCrypto", linkerSettings: [.linkedLibrary("crypto")]),
        // The test server's TLS front (TLS 1.2 and 1.3 over libssl, relaying to its plain HTTP server);
        // never linked into the library.
        .target(name: "CTestTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // The test bundle's environment, set before any test runs: a private XDG_CACHE_HOME, so the
        // tests never write into the user's cache directory. Linked into the tests only.
        .target(name: "CTestEnvironment"),
        // Netlink sockets for NetworkReachabilityManager (Linux headers only).
        .target(name: "CNetlink"),
        .target(
            name: "OperationNetworking",
            dependencies: [
                "CCurl", "CCurlShim", "CTrust", "CNetlink", "CZlib", "CBrotli", "CZstd", "CPsl", "CSQLite",
                // `Logger` for LoggingEventMonitor.
                .product(name: "Logging", package: "swift-log"),
                // MetricsEventMonitor's timer, recorders and meter.
                .product(name: "Metrics", package: "swift-metrics"),
                // One client span per operation, and `ServiceContext` (its `ServiceContextModule`).
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // In-process HTTP/1.1 and HTTPS loopback server, and certificates made for each test run, for the
        // tests and `onet demo` (never used by the library). A target, not a product: users of the
        // library never build SwiftNIO.
        .target(
            name: "OperationNetworkingTestServer",
            dependencies: [
                // Encoders for the gzip, br and zstd routes; certificates and Digest's MD5; HTTPS.
                "CZlib", "CBrotliEncoder", "CZstd", "CTestCrypto", "CTestTLS",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "onet",
            dependencies: [
                "OperationNetworking",
                "OperationNetworkingTestServer",
                // malloc_trim's declaration, for `onet bench --enqueue-all`.
                "CCurlShim",
                // zlib, for `onet request`'s gzip/deflate bodies (it offers httpie's Accept-Encoding itself).
                "CZlib",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "OperationNetworkingTests",
            dependencies: [
                "OperationNetworking", "OperationNetworkingTestServer", "CTestEnvironment",
                .product(name: "Logging", package: "swift-log"),
                // A recording MetricsFactory (the tests record spans with a tracer of their own).
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
