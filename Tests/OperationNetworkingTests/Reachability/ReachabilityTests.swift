import Foundation
@testable import OperationNetworking
import XCTest

/// Netlink parsing from message bytes, the status rules, and the manager's lifecycle.
final class ReachabilityTests: LibraryTestCase {
    /// A netlink message as the kernel lays it out (host order, 4-byte alignment).
    static func message(type: UInt16, body: [UInt8], attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var payload = body
        for (kind, value) in attributes {
            let length = 4 + value.count
            payload += le16(UInt16(length)) + le16(kind) + value
            payload += [UInt8](repeating: 0, count: (4 - length % 4) % 4)
        }
        let length = 16 + payload.count
        return le32(UInt32(length)) + le16(type) + le16(0) + le32(1) + le32(0) + payload
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }

    static func link(_ index: UInt32, _ name: String, up: Bool, type: UInt16 = 16) -> [UInt8] {
        let flags: UInt32 = up ? 0x1 | 0x40 : 0
        return message(type: type, body: [0, 0] + le16(1) + le32(index) + le32(flags) + le32(0),
                       attributes: [(3, Array(name.utf8) + [0])])
    }

    static func address(_ index: UInt32, _ bytes: [UInt8], type: UInt16 = 20) -> [UInt8] {
        message(type: type, body: [bytes.count == 4 ? 2 : 10, 24, 0, 0] + le32(index), attributes: [(2, bytes), (1, bytes)])
    }

    static func route(_ index: UInt32, destination: [UInt8] = [], prefix: UInt8 = 0, type: UInt16 = 24) -> [UInt8] {
        var attributes: [(UInt16, [UInt8])] = [(15, le32(254)), (4, le32(index))]
        if !destination.isEmpty { attributes.append((1, destination)) }
        return message(type: type, body: [2, prefix, 0, 0, 254, 3, 0, 1] + le32(0), attributes: attributes)
    }

    private func snapshot(_ chunks: [[UInt8]]) -> RoutingSnapshot {
        var snapshot = RoutingSnapshot()
        for message in RoutingSnapshot.messages(in: chunks.flatMap { $0 }) { snapshot.apply(message) }
        return snapshot
    }

    private let ethernet: (String) -> NetworkInterfaceKind = { _ in .wired }

    func testDefaultRouteOverAnUpLinkWithAnAddressIsReachable() {
        let up = snapshot([Self.link(2, "eth0", up: true), Self.address(2, [10, 0, 0, 2]), Self.route(2)])
        XCTAssertEqual(up.stateForAnyRoute(classify: ethernet), .reachable(.wired))
        XCTAssertEqual(up.links[2]?.name, "eth0")
        let noRoute = snapshot([Self.link(2, "eth0", up: true), Self.address(2, [10, 0, 0, 2])])
        XCTAssertEqual(noRoute.stateForAnyRoute(classify: ethernet), .notReachable)
        let down = snapshot([Self.link(2, "eth0", up: false), Self.address(2, [10, 0, 0, 2]), Self.route(2)])
        XCTAssertEqual(down.stateForAnyRoute(classify: ethernet), .notReachable)
        let noAddress = snapshot([Self.link(2, "eth0", up: true), Self.route(2)])
        XCTAssertEqual(noAddress.stateForAnyRoute(classify: ethernet), .notReachable)
        let removed = snapshot([Self.link(2, "eth0", up: true), Self.address(2, [10, 0, 0, 2]), Self.route(2),
                                Self.route(2, type: 25)])
        XCTAssertEqual(removed.stateForAnyRoute(classify: ethernet), .notReachable)
    }

    func testAddressesUseTheLongestPrefixRoute() {
        let table = snapshot([Self.link(2, "eth0", up: true), Self.address(2, [10, 0, 0, 2]),
                              Self.link(3, "wwan0", up: false), Self.address(3, [100, 64, 0, 2]),
                              Self.route(2, destination: [10, 0, 0, 0], prefix: 24),
                              Self.route(3, destination: [198, 51, 100, 0], prefix: 24)])
        XCTAssertEqual(table.state(for: [10, 0, 0, 9], classify: ethernet), .reachable(.wired))
        XCTAssertEqual(table.state(for: [198, 51, 100, 7], classify: ethernet), .notReachable, "its link is down")
        XCTAssertEqual(table.state(for: [203, 0, 113, 1], classify: ethernet), .notReachable, "no route")
        XCTAssertEqual(table.state(for: [127, 0, 0, 1], classify: ethernet), .reachable(.loopback))
    }

    func testDomainsAreResolvedThenRouted() {
        let empty = RoutingSnapshot()
        XCTAssertEqual(NetworkReachabilityManager.state(of: .domain("localhost"), in: empty, sysfsRoot: "/nonexistent"),
                       .reachable(.loopback), "localhost resolves to loopback")
        XCTAssertEqual(NetworkReachabilityManager.state(of: .domain("no-such-host.invalid"), in: empty, sysfsRoot: "/nonexistent"),
                       .notReachable, "a name that does not resolve is not reachable")
        let routed = snapshot([Self.link(2, "eth0", up: true), Self.address(2, [10, 0, 0, 2]), Self.route(2)])
        XCTAssertEqual(NetworkReachabilityManager.state(of: .address([192, 0, 2, 10]), in: routed, sysfsRoot: "/nonexistent"),
                       .reachable(.wired), "the default route covers every address")
    }

    func testMalformedMessagesAreSkipped() {
        var bytes = Self.link(2, "eth0", up: true)
        bytes[0] = 0xFF   // a length past the end
        XCTAssertTrue(RoutingSnapshot.messages(in: bytes).isEmpty)
        XCTAssertTrue(RoutingSnapshot.messages(in: [1, 2, 3]).isEmpty)
        var snapshot = RoutingSnapshot()
        snapshot.apply(NetlinkMessage(type: 24, payload: [2, 0]))
        snapshot.apply(NetlinkMessage(type: 16, payload: []))
        XCTAssertEqual(snapshot, RoutingSnapshot())
    }

    func testInterfaceKinds() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("onet-sysfs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("wlan0/wireless"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("wlp2s0/phy80211"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: root.appendingPathComponent("usb0"), withIntermediateDirectories: true)
        try Data("INTERFACE=usb0\nDEVTYPE=wwan\n".utf8).write(to: root.appendingPathComponent("usb0/uevent"))
        XCTAssertEqual(NetworkReachabilityManager.classifyInterface("wlan0", sysfsRoot: root.path), .wifi)
        XCTAssertEqual(NetworkReachabilityManager.classifyInterface("wlp2s0", sysfsRoot: root.path), .wifi)
        for name in ["wwan0", "rmnet_data0", "usb0"] {
            XCTAssertEqual(NetworkReachabilityManager.classifyInterface(name, sysfsRoot: root.path), .cellular, name)
        }
        for name in ["eth0", "ppp0", "tun0"] {
            XCTAssertEqual(NetworkReachabilityManager.classifyInterface(name, sysfsRoot: root.path), .wired, name)
        }
        XCTAssertEqual(NetworkReachabilityManager.classifyInterface("lo", sysfsRoot: root.path), .loopback)
    }

    /// AFN code switches over four statuses and treats anything else as offline; a wired route must
    /// read as "reachable, not WWAN" there, with the link kind available on its own.
    func testEveryNonCellularLinkIsReachableViaWiFiForAFNCode() {
        func afnAppIsOnline(_ status: NetworkReachabilityStatus) -> Bool {
            switch status {
            case .reachableViaWiFi, .reachableViaWWAN: return true
            default: return false
            }
        }
        let wired = snapshot([Self.link(2, "eth0", up: true), Self.address(2, [10, 0, 0, 2]), Self.route(2)])
            .stateForAnyRoute(classify: { NetworkReachabilityManager.classifyInterface($0, sysfsRoot: "/nonexistent") })
        XCTAssertEqual(wired, .reachable(.wired))
        XCTAssertEqual(wired.status, .reachableViaWiFi)
        XCTAssertTrue(afnAppIsOnline(wired.status), "a wired server is online for AFN code")
        XCTAssertEqual(ReachabilityState.reachable(.wifi).status, .reachableViaWiFi)
        XCTAssertEqual(ReachabilityState.reachable(.cellular).status, .reachableViaWWAN)
        XCTAssertEqual(ReachabilityState.notReachable.status, .notReachable)
        XCTAssertNil(ReachabilityState.notReachable.kind)
    }

    func testPublicSurface() {
        XCTAssertNil(NetworkReachabilityManager(address: "not-an-ip"))
        XCTAssertNotNil(NetworkReachabilityManager(address: "::1"))
        XCTAssertNil(NetworkReachabilityManager(domain: ""))
        XCTAssertEqual(NetworkReachabilityStatus.reachableViaWiFi.localizedDescription, "Reachable via WiFi")
        XCTAssertEqual(NetworkReachabilityStatus.notReachable.localizedDescription, "Not Reachable")
        XCTAssertTrue(HTTPRequestOperationManager().reachabilityManager === NetworkReachabilityManager.shared)
    }

    func testFirstStatusArrivesPromptlyAndStoppingReleasesTheSocket() throws {
        let before = openFileDescriptorCount()
        let manager = try XCTUnwrap(NetworkReachabilityManager(address: "127.0.0.1"))
        let queue = DispatchQueue(label: "test.reachability")
        manager.callbackQueue = queue
        let first = expectation(description: "first status")
        manager.setReachabilityStatusChange { status in
            dispatchPrecondition(condition: .onQueue(queue))
            XCTAssertEqual(status, .reachableViaWiFi, "reachable, not WWAN: AFN's meaning")
            first.fulfill()
        }
        let notified = expectation(forNotification: .reachabilityDidChange, object: manager) { note in
            note.userInfo?[ReachabilityNotificationStatusItem] as? Int == NetworkReachabilityStatus.reachableViaWiFi.rawValue
        }
        let started = Date()
        manager.startMonitoring()
        wait(for: [first, notified], timeout: 5)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
        XCTAssertTrue(manager.isReachable)
        XCTAssertEqual(manager.networkInterfaceKind, .loopback, "the link kind is reported separately")
        manager.stopMonitoring()
        XCTAssertTrue(eventually { openFileDescriptorCount() <= before }, "fds \(before) → \(openFileDescriptorCount())")
    }

    func testAManagerDeallocatedWhileMonitoringStops() throws {
        let before = openFileDescriptorCount()
        let first = expectation(description: "first status")
        do {
            let manager = try XCTUnwrap(NetworkReachabilityManager(address: "127.0.0.1"))
            manager.setReachabilityStatusChange { _ in first.fulfill() }
            manager.startMonitoring()
            wait(for: [first], timeout: 5)
        }
        XCTAssertTrue(eventually { openFileDescriptorCount() <= before }, "fds \(before) → \(openFileDescriptorCount())")
    }
}
