// Fuzzes the netlink parsing behind NetworkReachabilityManager: RoutingSnapshot.messages(in:) on raw
// bytes as recv() returns them, apply(_:) of every message to a snapshot, attributes(_:from:) at
// fuzzed offsets, and the reachability decisions over the snapshot that results.
//
// Invariants besides not crashing: messages never claim more bytes than the buffer holds, and
// attributes never more than the bytes after their start.
import FuzzSupport
import Foundation
@testable import OperationNetworking

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzNetlink(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = FuzzInput(data, size).remaining
    let messages = RoutingSnapshot.messages(in: bytes)
    guard messages.reduce(0, { $0 + 16 + $1.payload.count }) <= bytes.count else {
        FuzzDriver.fail("\(messages.count) messages claim more than \(bytes.count) bytes")
    }
    var snapshot = RoutingSnapshot()
    for message in messages {
        snapshot.apply(message)
        for start in [0, 8, 12, 16, Int(message.type % 32)] {
            let attributes = RoutingSnapshot.attributes(message.payload, from: start)
            guard attributes.values.reduce(0, { $0 + 4 + $1.count }) <= max(0, message.payload.count - start) else {
                FuzzDriver.fail("attributes claim more than the \(message.payload.count - start) bytes after \(start)")
            }
        }
    }
    let classify: (String) -> NetworkInterfaceKind = { name in
        name.hasPrefix("w") ? .wifi : name.hasPrefix("rmnet") ? .cellular : name == "lo" ? .loopback : .wired
    }
    _ = snapshot.stateForAnyRoute(classify: classify)
    for route in snapshot.routes {
        _ = snapshot.state(for: route.destination, classify: classify)
    }
    _ = snapshot.state(for: [8, 8, 8, 8], classify: classify)
    _ = snapshot.state(for: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1], classify: classify)
    return 0
}

// Messages as the kernel lays them out (nlmsghdr, then ifinfomsg / ifaddrmsg / rtmsg, then rtattrs),
// the same shapes ReachabilityTests builds.
private func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
private func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }

private func message(type: UInt16, body: [UInt8], attributes: [(UInt16, [UInt8])]) -> [UInt8] {
    var payload = body
    for (kind, value) in attributes {
        let length = 4 + value.count
        payload += le16(UInt16(length)) + le16(kind) + value
        payload += [UInt8](repeating: 0, count: (4 - length % 4) % 4)
    }
    return le32(UInt32(16 + payload.count)) + le16(type) + le16(0) + le32(1) + le32(0) + payload
}

private func link(_ index: UInt32, _ name: String, up: Bool) -> [UInt8] {
    message(type: 16, body: [0, 0] + le16(1) + le32(index) + le32(up ? 0x41 : 0) + le32(0),
            attributes: [(3, Array(name.utf8) + [0])])
}

private func address(_ index: UInt32, _ bytes: [UInt8]) -> [UInt8] {
    message(type: 20, body: [bytes.count == 4 ? 2 : 10, 24, 0, 0] + le32(index), attributes: [(1, bytes), (2, bytes)])
}

private func route(_ index: UInt32, destination: [UInt8] = [], prefix: UInt8 = 0) -> [UInt8] {
    var attributes: [(UInt16, [UInt8])] = [(15, le32(254)), (4, le32(index))]
    if !destination.isEmpty { attributes.append((1, destination)) }
    return message(type: 24, body: [destination.count == 16 ? 10 : 2, prefix, 0, 0, 254, 4, 0, 1] + le32(0), attributes: attributes)
}

private func seeds() -> [String: [UInt8]] {
    [
        "default-route": link(2, "eth0", up: true) + address(2, [192, 168, 1, 10]) + route(2),
        "prefix-routes": link(3, "wlan0", up: true) + address(3, [10, 0, 0, 2]) + route(3, destination: [10, 0, 0, 0], prefix: 8)
            + route(3, destination: [10, 1, 0, 0], prefix: 16),
        "ipv6-down": link(4, "rmnet0", up: false) + address(4, [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12))
            + route(4, destination: [0x20, 0x01] + [UInt8](repeating: 0, count: 14), prefix: 16),
        "deletions": link(2, "eth0", up: true) + route(2) + message(type: 25, body: [2, 0, 0, 0, 254, 4, 0, 1] + le32(0),
            attributes: [(15, le32(254)), (4, le32(2))]) + message(type: 17, body: [0, 0] + le16(1) + le32(2) + le32(0) + le32(0), attributes: []),
        "done": message(type: 3, body: le32(0), attributes: []),
    ]
}

exit(FuzzDriver.main(seeds: seeds) { fuzzNetlink($0, $1) })
