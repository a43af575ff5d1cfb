// swift-tools-version:6.0
// The operation model's floor: the thread hand-offs API.md requires of every request, with a transport
// that costs nothing. Not part of the library's package; build it with `swift build -c release` here.
import PackageDescription

let package = Package(
    name: "floor",
    targets: [.executableTarget(name: "floor")],
    swiftLanguageModes: [.v6]
)
