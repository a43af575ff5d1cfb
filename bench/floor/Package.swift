// swift-tools-version:6.0
// The operation model's floor: the thread hand-offs API.md requires of every request, with a transport
// that costs nothing (`floor N C [notify]`), or with raw libcurl doing real transfers on the loop thread
// (`floor N C notify --url URL`: the model and raw libcurl composed, with no library in between).
// Not part of the library's package; build it with `swift build -c release` here.
import PackageDescription

let package = Package(
    name: "floor",
    targets: [
        .target(name: "CFloorCurl", linkerSettings: [.linkedLibrary("curl")]),
        .executableTarget(name: "floor", dependencies: ["CFloorCurl"]),
    ],
    swiftLanguageModes: [.v6]
)
