import Foundation

/// Whether the network can be reached, and how (AFNetworking's `AFNetworkReachabilityStatus`): the
/// four statuses AFN code switches over, meaning what that code assumes.
/// - Threading: an immutable value.
public enum NetworkReachabilityStatus: Int, Sendable {
    /// Not known yet (before monitoring delivered the first status), or netlink is unavailable.
    case unknown = -1
    /// No usable route.
    case notReachable = 0
    /// Reachable over a cellular (WWAN) link.
    case reachableViaWWAN = 1
    /// Reachable, not over a cellular link: Wi-Fi, and on Linux also wired, VPN or any other
    /// non-cellular link (AFN's meaning, "reachable, not WWAN"); `networkInterfaceKind` tells which.
    case reachableViaWiFi = 2

    /// "Unknown", "Not Reachable", "Reachable via WWAN", "Reachable via WiFi".
    public var localizedDescription: String {
        switch self {
        case .unknown: return NSLocalizedString("Unknown", comment: "")
        case .notReachable: return NSLocalizedString("Not Reachable", comment: "")
        case .reachableViaWWAN: return NSLocalizedString("Reachable via WWAN", comment: "")
        case .reachableViaWiFi: return NSLocalizedString("Reachable via WiFi", comment: "")
        }
    }
}

/// The kind of link a reachable route leaves through (not in AFN, whose status folded it in): for
/// code that cares whether "reachable via WiFi" is really Wi-Fi.
/// - Threading: an immutable value.
public enum NetworkInterfaceKind: String, Sendable {
    /// Ethernet, and any other link that is neither wireless nor cellular (bridge, VPN tunnel, PPP).
    case wired
    /// A wireless LAN link (`/sys/class/net/<if>/wireless` or `phy80211`).
    case wifi
    /// A cellular (WWAN) device: `wwan*`, `rmnet*`, or one the kernel marks `DEVTYPE=wwan`.
    case cellular
    /// The loopback interface (a watched loopback address).
    case loopback
}

/// A reachability answer with the link behind it; the monitor reports it when it changes.
/// - Threading: an immutable value.
enum ReachabilityState: Equatable, Sendable {
    case unknown
    case notReachable
    case reachable(NetworkInterfaceKind)

    /// AFN's status: cellular is WWAN, every other reachable link "WiFi" (reachable, not WWAN).
    var status: NetworkReachabilityStatus {
        switch self {
        case .unknown: return .unknown
        case .notReachable: return .notReachable
        case .reachable(.cellular): return .reachableViaWWAN
        case .reachable: return .reachableViaWiFi
        }
    }

    var kind: NetworkInterfaceKind? {
        if case .reachable(let kind) = self { return kind }
        return nil
    }
}

extension Notification.Name {
    /// Posted (object: the manager) when a monitored status changes; `userInfo[ReachabilityNotificationStatusItem]`
    /// holds the new `NetworkReachabilityStatus` raw value as an `Int`.
    public static let reachabilityDidChange = Notification.Name("OperationNetworkingReachabilityDidChangeNotification")
}

/// `userInfo` key of `reachabilityDidChange`: the status's raw value (`Int`).
public let ReachabilityNotificationStatusItem = "OperationNetworkingReachabilityNotificationStatusItem"

/// Watches whether the network (or a host) is reachable, from the kernel's routing and link state
/// (netlink) — AFNetworking's `AFNetworkReachabilityManager` on Linux. A `NETLINK_ROUTE` socket
/// (link, IPv4/IPv6 address and route groups) is watched on a thread of its own, without polling;
/// `stopMonitoring()` closes it, and a manager freed while monitoring stops itself.
///
/// Reachable means: a route (the default route, or for a host the longest-prefix route to one of its
/// addresses) goes out through a link that is up and has a global address. A cellular link (`wwan*`,
/// `rmnet*`, or `DEVTYPE=wwan` in the kernel's device description) gives `.reachableViaWWAN`; every
/// other link — Wi-Fi, wired, VPN, PPP — gives `.reachableViaWiFi`, AFN's "reachable, not WWAN", so
/// AFN code's `switch` treats a wired server as online. `networkInterfaceKind` tells the links apart.
/// Reachability is a hint for pausing and resuming a queue, not a pre-flight check (as in AFN).
/// - Threading: any thread. The status block and notification run on `callbackQueue` (default: the
///   library's callback queue), when the status or the link kind behind it changes (never twice for
///   the same status and kind), the first one promptly after `startMonitoring()`. The manager's
///   state lives behind its lock, which is never held while the block, a notification or the netlink
///   monitor runs.
open class NetworkReachabilityManager: NSObject, @unchecked Sendable {
    /// What is watched.
    enum Target {
        case anyRoute
        case address([UInt8])
        case domain(String)
    }

    /// The process-wide manager for "any network" (the default route).
    public static let shared = NetworkReachabilityManager(target: .anyRoute)

    private struct State {
        var reachability: ReachabilityState = .unknown
        var block: (@Sendable (NetworkReachabilityStatus) -> Void)?
        var monitor: NetlinkMonitor?
        var queue: DispatchQueue?
        var sysfsRoot = "/sys/class/net"
    }

    private let target: Target
    private let state = Protected(State())

    /// Where `/sys/class/net` is read from (tests point it elsewhere); read when monitoring starts.
    var sysfsRoot: String {
        get { state.withLock { $0.sysfsRoot } }
        set { state.withLock { $0.sysfsRoot = newValue } }
    }

    init(target: Target) {
        self.target = target
        super.init()
    }

    /// A manager for a host name, resolved at every change. `nil` for an empty name.
    public convenience init?(domain: String) {
        guard !domain.isEmpty else { return nil }
        self.init(target: .domain(domain))
    }

    /// A manager for an IPv4 or IPv6 literal. `nil` when `address` is not one.
    public convenience init?(address: String) {
        guard let bytes = NetworkReachabilityManager.addressBytes(address) else { return nil }
        self.init(target: .address(bytes))
    }

    deinit {
        state.withLock { $0.monitor }?.stop()
    }

    /// The last status seen; `.unknown` until monitoring delivered the first one.
    public var networkReachabilityStatus: NetworkReachabilityStatus { state.withLock { $0.reachability.status } }
    /// The kind of link behind the last status; `nil` while not reachable or unknown.
    public var networkInterfaceKind: NetworkInterfaceKind? { state.withLock { $0.reachability.kind } }
    /// Reachable by any link.
    public var isReachable: Bool { isReachableViaWWAN || isReachableViaWiFi }
    /// Reachable over a cellular link.
    public var isReachableViaWWAN: Bool { networkReachabilityStatus == .reachableViaWWAN }
    /// Reachable over a link that is not cellular (AFN's meaning; wired links included).
    public var isReachableViaWiFi: Bool { networkReachabilityStatus == .reachableViaWiFi }
    /// The status in words.
    public var localizedNetworkReachabilityStatusString: String { networkReachabilityStatus.localizedDescription }

    /// Where the status block and notification run. Default `nil`: the library's serial callback queue.
    public var callbackQueue: DispatchQueue? {
        get { state.withLock { $0.queue } }
        set { state.withLock { $0.queue = newValue } }
    }

    /// Sets the block called with each new status (on `callbackQueue`), also when only the link behind
    /// it changed (Ethernet to Wi-Fi: read `networkInterfaceKind`). `nil` removes it.
    @preconcurrency
    public func setReachabilityStatusChange(_ block: (@Sendable (NetworkReachabilityStatus) -> Void)?) {
        let replaced = state.withLock { current in
            let old = current.block
            current.block = block
            return old
        }
        // The old block (and what it captured) is released with no lock held.
        withExtendedLifetime(replaced) {}
    }

    /// Starts watching; the first status arrives promptly. Calling it again restarts the watch.
    public func startMonitoring() {
        stopMonitoring()
        let target = self.target
        let sysfs = sysfsRoot
        let monitor = NetlinkMonitor(compute: { snapshot in
            NetworkReachabilityManager.state(of: target, in: snapshot, sysfsRoot: sysfs)
        }, onStatus: { [weak self] state in
            self?.deliver(state)
        })
        state.withLock { $0.monitor = monitor }
        if !monitor.start() {
            state.withLock { $0.monitor = nil }
            deliver(ReachabilityState.unknown)
        }
    }

    /// Stops watching and releases the netlink socket.
    public func stopMonitoring() {
        let monitor: NetlinkMonitor? = state.withLock {
            let monitor = $0.monitor
            $0.monitor = nil
            return monitor
        }
        monitor?.stop()
    }

    // MARK: - Internal

    private func deliver(_ newState: ReachabilityState) {
        let newStatus = newState.status
        let (block, queue) = state.withLock { current -> ((@Sendable (NetworkReachabilityStatus) -> Void)?, DispatchQueue) in
            current.reachability = newState
            return (current.block, current.queue ?? CallbackQueues.callback)
        }
        queue.async { [self] in
            block?(newStatus)
            NotificationCenter.default.post(name: .reachabilityDidChange, object: self,
                                            userInfo: [ReachabilityNotificationStatusItem: newStatus.rawValue])
        }
    }

    static func state(of target: Target, in snapshot: RoutingSnapshot, sysfsRoot: String) -> ReachabilityState {
        let classify = { (name: String) in classifyInterface(name, sysfsRoot: sysfsRoot) }
        switch target {
        case .anyRoute:
            return snapshot.stateForAnyRoute(classify: classify)
        case .address(let bytes):
            return snapshot.state(for: bytes, classify: classify)
        case .domain(let name):
            let states = resolve(name).map { snapshot.state(for: $0, classify: classify) }
            return states.first { $0 != .notReachable } ?? .notReachable
        }
    }

    /// The kind of link an interface name is. PPP is not assumed cellular (it is also DSL and VPNs).
    static func classifyInterface(_ name: String, sysfsRoot: String) -> NetworkInterfaceKind {
        if name == "lo" { return .loopback }
        if ["wwan", "rmnet"].contains(where: { name.hasPrefix($0) }) { return .cellular }
        let base = sysfsRoot + "/" + name
        if let uevent = FileManager.default.contents(atPath: base + "/uevent"),
           String(decoding: uevent, as: UTF8.self).split(separator: "\n").contains("DEVTYPE=wwan") {
            return .cellular
        }
        if FileManager.default.fileExists(atPath: base + "/wireless") || FileManager.default.fileExists(atPath: base + "/phy80211") {
            return .wifi
        }
        return .wired
    }

    /// IPv4 or IPv6 literal → bytes.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }

    /// The addresses a host name resolves to (empty when it does not).
    private static func resolve(_ name: String) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var result: [[UInt8]] = []
        var cursor = list
        while let entry = cursor?.pointee {
            if let address = entry.ai_addr {
                if entry.ai_family == AF_INET {
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                        result.append(withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) })
                    }
                } else if entry.ai_family == AF_INET6 {
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                        result.append(withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) })
                    }
                }
            }
            cursor = entry.ai_next
        }
        return result
    }
}
