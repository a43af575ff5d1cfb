// swift-tools-version:6.0
// OperationNetworking: AFNetworking 2.x's operation-queue HTTP client for Linux, on libcurl.
import PackageDescription

let package = Package(
    name: "OperationNetworking",
    products: [
        .library(name: "OperationNetworking", targets: ["OperationNetworking"]),
        .executable(name: "onet", targets: ["onet"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        // `swift package generate-documentation` for the DocC catalog (scripts/docs); a plugin only,
        // nothing of it is linked into the library or the tool.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // libcurl itself, found through pkg-config; Debian: libcurl4-openssl-dev.
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // zlib, found through pkg-config; Debian: zlib1g-dev. The library inflates gzip and deflate
        // bodies itself so that a compressed stream cut short is an error (libcurl 7.88 passes it).
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // libbrotlidec and libzstd, found through pkg-config; Debian: libbrotli-dev, libzstd-dev. The
        // library decodes br and zstd bodies itself for the same reason as gzip (see ContentDecoder).
        .systemLibrary(
            name: "CBrotli",
            pkgConfig: "libbrotlidec",
            providers: [.apt(["libbrotli-dev"])]
        ),
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // libbrotlienc (also in libbrotli-dev), for the test server's br bodies; never linked into the library.
        .systemLibrary(
            name: "CBrotliEncoder",
            pkgConfig: "libbrotlienc",
            providers: [.apt(["libbrotli-dev"])]
        ),
        // Typed, non-variadic wrappers for curl_easy_setopt / getinfo / curl_multi_setopt.
        .target(name: "CCurlShim", dependencies: ["CCurl"]),
        // X.509 verification for SecurityPolicy through the OpenSSL libcurl already uses (libssl-dev).
        .target(name: "CTrust", linkerSettings: [.linkedLibrary("crypto")]),
        // Netlink sockets for NetworkReachabilityManager (Linux headers only).
        .target(name: "CNetlink"),
        .target(
            name: "OperationNetworking",
            dependencies: [
                "CCurl", "CCurlShim", "CTrust", "CNetlink", "CZlib", "CBrotli", "CZstd",
                // `Logger` for LoggingEventMonitor.
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // In-process HTTP/1.1 and HTTPS loopback server, and certificates made for each test run, for the
        // tests and `onet demo` (never used by the library). A target, not a product: users of the
        // library never build SwiftNIO, NIOSSL, swift-certificates or swift-crypto.
        .target(
            name: "OperationNetworkingTestServer",
            dependencies: [
                // Encoders for the br and zstd routes.
                "CBrotliEncoder", "CZstd",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "onet",
            dependencies: [
                "OperationNetworking",
                "OperationNetworkingTestServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "OperationNetworkingTests",
            dependencies: [
                "OperationNetworking", "OperationNetworkingTestServer",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
