import Foundation

/// One netlink message: its type and payload (header stripped).
struct NetlinkMessage: Equatable {
    var type: UInt16
    var payload: [UInt8]
}

/// The kernel's links, addresses and routes, as netlink reports them, and the reachability they give.
///
/// Parsing is byte-level and bounds-checked: a malformed message is skipped, never trusted.
/// - Threading: a value; owned by the monitor thread (tests build it from recorded bytes).
struct RoutingSnapshot: Equatable {
    struct Link: Equatable {
        var name: String
        /// `IFF_UP` and `IFF_RUNNING` (carrier) both set.
        var isUp: Bool
    }

    struct Route: Equatable {
        var family: UInt8
        var destination: [UInt8]
        var prefixLength: Int
        var outputInterface: Int
    }

    var links: [Int: Link] = [:]
    /// Global-scope addresses per interface index.
    var addresses: [Int: Set<[UInt8]>] = [:]
    var routes: [Route] = []

    // MARK: - Parsing

    /// Splits a buffer of netlink messages (each aligned to 4 bytes).
    static func messages(in bytes: [UInt8]) -> [NetlinkMessage] {
        var result: [NetlinkMessage] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(read32(bytes, offset))
            guard length >= 16, offset + length <= bytes.count else { break }
            result.append(NetlinkMessage(type: read16(bytes, offset + 4), payload: Array(bytes[(offset + 16)..<(offset + length)])))
            offset += (length + 3) & ~3
        }
        return result
    }

    /// Applies one link, address or route message (new or deleted); others are ignored.
    mutating func apply(_ message: NetlinkMessage) {
        let bytes = message.payload
        switch message.type {
        case 16, 17:   // RTM_NEWLINK, RTM_DELLINK: ifinfomsg (16 bytes)
            guard bytes.count >= 16 else { return }
            let index = Int(Int32(bitPattern: RoutingSnapshot.read32(bytes, 4)))
            let flags = RoutingSnapshot.read32(bytes, 8)
            if message.type == 17 {
                links[index] = nil
                return
            }
            let name = RoutingSnapshot.attributes(bytes, from: 16)[3].map { RoutingSnapshot.string($0) } ?? links[index]?.name ?? "if\(index)"
            links[index] = Link(name: name, isUp: flags & 0x1 != 0 && flags & 0x40 != 0)
        case 20, 21:   // RTM_NEWADDR, RTM_DELADDR: ifaddrmsg (8 bytes)
            guard bytes.count >= 8, bytes[3] == 0 else { return }   // global scope only
            let index = Int(RoutingSnapshot.read32(bytes, 4))
            let attributes = RoutingSnapshot.attributes(bytes, from: 8)
            guard let address = attributes[2] ?? attributes[1] else { return }   // IFA_LOCAL, else IFA_ADDRESS
            if message.type == 20 {
                addresses[index, default: []].insert(address)
            } else {
                addresses[index]?.remove(address)
            }
        case 24, 25:   // RTM_NEWROUTE, RTM_DELROUTE: rtmsg (12 bytes)
            guard bytes.count >= 12, bytes[7] == 1 else { return }   // RTN_UNICAST
            let attributes = RoutingSnapshot.attributes(bytes, from: 12)
            let table = attributes[15].map { Int(RoutingSnapshot.read32($0, 0)) } ?? Int(bytes[4])
            guard table == 254, let oif = attributes[4], oif.count >= 4 else { return }   // main table, RTA_OIF
            let route = Route(family: bytes[0], destination: attributes[1] ?? [], prefixLength: Int(bytes[1]),
                              outputInterface: Int(RoutingSnapshot.read32(oif, 0)))
            if message.type == 24 {
                if !routes.contains(route) { routes.append(route) }
            } else {
                routes.removeAll { $0 == route }
            }
        default:
            return
        }
    }

    // MARK: - Decisions

    /// "Any network": a default route over a link that is up and has an address.
    func stateForAnyRoute(classify: (String) -> NetworkInterfaceKind) -> ReachabilityState {
        let usable = routes.filter { $0.prefixLength == 0 }.compactMap(usableLink)
        return best(usable.map(classify))
    }

    /// One address (IPv4 or IPv6 bytes): the longest-prefix route to it must be usable.
    func state(for address: [UInt8], classify: (String) -> NetworkInterfaceKind) -> ReachabilityState {
        let family: UInt8 = address.count == 4 ? 2 : 10
        if address == [127, 0, 0, 1] || address == [UInt8](repeating: 0, count: 15) + [1] { return .reachable(.loopback) }
        let matching = routes.filter { $0.family == family && RoutingSnapshot.matches(address, $0) }
        guard let longest = matching.map(\.prefixLength).max() else { return .notReachable }
        let usable = matching.filter { $0.prefixLength == longest }.compactMap(usableLink)
        return best(usable.map(classify))
    }

    private func usableLink(_ route: Route) -> String? {
        guard let link = links[route.outputInterface], link.isUp,
              !(addresses[route.outputInterface]?.isEmpty ?? true) else { return nil }
        return link.name
    }

    private func best(_ kinds: [NetworkInterfaceKind]) -> ReachabilityState {
        // Prefer the cheaper link, as a user would: wired, then WiFi, then cellular.
        for preferred in [NetworkInterfaceKind.wired, .wifi, .loopback, .cellular] where kinds.contains(preferred) {
            return .reachable(preferred)
        }
        return .notReachable
    }

    private static func matches(_ address: [UInt8], _ route: Route) -> Bool {
        guard route.prefixLength > 0 else { return true }
        guard route.destination.count == address.count else { return false }
        var remaining = route.prefixLength
        for (a, b) in zip(address, route.destination) {
            if remaining <= 0 { return true }
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a & mask != b & mask { return false }
            remaining -= 8
        }
        return true
    }

    // MARK: - Bytes

    /// Route attributes (`rtattr`: length, type, value; aligned to 4) from `start`, by type.
    static func attributes(_ bytes: [UInt8], from start: Int) -> [UInt16: [UInt8]] {
        var result: [UInt16: [UInt8]] = [:]
        var offset = start
        while offset + 4 <= bytes.count {
            let length = Int(read16(bytes, offset))
            guard length >= 4, offset + length <= bytes.count else { break }
            result[read16(bytes, offset + 2) & 0x3FFF] = Array(bytes[(offset + 4)..<(offset + length)])
            offset += (length + 3) & ~3
        }
        return result
    }

    static func read16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        guard offset + 2 <= bytes.count else { return 0 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    static func read32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        guard offset + 4 <= bytes.count else { return 0 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    static func string(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
}
